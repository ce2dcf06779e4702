import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, it } from "node:test";
import { FailedPreconditionError } from "../../core/index.js";
import { useEngine } from "./fixture.js";

/**
 * Issue 22: groups.max_members (here 6) is enforced on create and add, before anything is
 * written, inside the atomic step of the add so that concurrent adds cannot overshoot it. The
 * expected counts are worked out by hand from the members each step names.
 */
describe("the group size limit", { timeout: 60_000 }, () => {
  const MAX = 6;
  const fx = useEngine("single", { maxGroupMembers: MAX });
  const ids = (n: number) => Array.from({ length: n }, () => randomUUID());
  const full = (field: string) => (e: unknown) => e instanceof FailedPreconditionError && e.details.reason === "GROUP_FULL" && e.details.field === field && /groups\.max_members = 6/.test(e.message);

  it("create: at most the limit (owner included); past it refused, nothing created", async () => {
    const tenant = fx.tenant();
    const owner = randomUUID();
    const at = await fx.engine.createGroup({ tenant, owner, members: ids(MAX - 1) });
    assert.equal(at.memberCount, MAX);
    assert.equal(at.maxMembers, MAX);
    const group = randomUUID();
    await assert.rejects(fx.engine.createGroup({ tenant, group, owner, members: ids(MAX) }), full("members"));
    await assert.rejects(fx.engine.getGroup(tenant, group), /not found/i, "nothing created");
  });

  it("add: a change past the limit is refused whole with nothing written (also as a dry run); a remove is not limited", async () => {
    const tenant = fx.tenant();
    const owner = randomUUID();
    const { group } = await fx.engine.createGroup({ tenant, owner, members: ids(2) });
    const before = await fx.digest(tenant, group);
    await assert.rejects(fx.engine.addMembers({ tenant, group, users: ids(4) }), full("users"));
    await assert.rejects(fx.engine.addMembers({ tenant, group, users: ids(4), dryRun: true }), full("users"));
    assert.equal(await fx.digest(tenant, group), before, "nothing written");
    const three = ids(3);
    const added = await fx.engine.addMembers({ tenant, group, users: three });
    assert.equal(added.memberCount, MAX, "exactly at the limit");
    await assert.rejects(fx.engine.addMembers({ tenant, group, users: ids(1) }), full("users"));
    const removed = await fx.engine.removeMembers({ tenant, group, users: [three[0]!] });
    assert.equal(removed.memberCount, MAX - 1);
    // naming a current member with a newcomer: only the newcomer counts
    const again = await fx.engine.addMembers({ tenant, group, users: [three[1]!, randomUUID()] });
    assert.equal(again.memberCount, MAX);
  });

  it("concurrent adds planned at the same count cannot overshoot: the atomic check refuses the one that would", async () => {
    const tenant = fx.tenant();
    const owner = randomUUID();
    const { group } = await fx.engine.createGroup({ tenant, owner, members: ids(1) });
    // 2 members; each add of 3 fits alone (5), both together would be 8 > 6
    const results = await Promise.allSettled([fx.engine.addMembers({ tenant, group, users: ids(3) }), fx.engine.addMembers({ tenant, group, users: ids(3) })]);
    const ok = results.filter((r) => r.status === "fulfilled");
    const refused = results.filter((r) => r.status === "rejected");
    assert.equal(ok.length, 1);
    assert.equal(refused.length, 1);
    assert.ok(full("users")((refused[0] as PromiseRejectedResult).reason), String((refused[0] as PromiseRejectedResult).reason));
    assert.equal((await fx.engine.getGroup(tenant, group)).memberCount, 5);
  });
});
