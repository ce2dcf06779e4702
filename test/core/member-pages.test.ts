import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, it } from "node:test";
import { InvalidArgumentError, PermissionDeniedError, REDIS_CALL_MEMBER_BUDGET, type Member, type MemberPage } from "../../core/index.js";
import { ALL_TOPOLOGIES } from "../harness/redis.js";
import { useEngine } from "./fixture.js";

/**
 * Issue 22: the member list pages with an HSCAN cursor, one bounded step per call, instead of one
 * HGETALL of the whole table. The expected members are the ids this test creates and removes.
 */
for (const kind of ALL_TOPOLOGIES) {
  describe(`member list pages (${kind})`, { timeout: 120_000 }, () => {
    const fx = useEngine(kind, { maxInitialMembers: 5000 });
    const ids = (n: number) => Array.from({ length: n }, () => randomUUID());

    async function listAll(req: { tenant: string; group: string; asUser?: string; limit?: number }): Promise<{ pages: MemberPage[]; seen: Map<string, Member> }> {
      const pages: MemberPage[] = [];
      const seen = new Map<string, Member>();
      let cursor = "";
      do {
        const page = await fx.engine.listMembers({ ...req, cursor });
        pages.push(page);
        for (const m of page.members) seen.set(m.userId, m);
        cursor = page.nextCursor;
        assert.ok(pages.length < 10_000, "the listing ends");
      } while (cursor !== "");
      return { pages, seen };
    }

    it("pages of at most about `limit` cover every member; a user sees current members only, after one check of their own entry", async () => {
      const tenant = fx.tenant();
      const owner = randomUUID();
      const members = ids(2499);
      const { group } = await fx.engine.createGroup({ tenant, owner, members });
      const removed: string[] = members.slice(0, 7);
      await fx.engine.removeMembers({ tenant, group, users: removed });
      const active = new Set([owner, ...members.slice(7)]);
      const everyone = new Set([owner, ...members]);

      const statsBefore = await hgetallCalls(fx.store.clients()[0]!, kind);
      const limit = 100;
      const admin = await listAll({ tenant, group, limit });
      assert.deepEqual(new Set(admin.seen.keys()), everyone, "every member ever is on some page");
      for (const [u, m] of admin.seen) assert.equal(m.state, removed.includes(u) ? "REMOVED" : "ACTIVE", u);
      assert.ok(admin.pages.length >= Math.ceil(everyone.size / (2 * limit)), `many pages: ${admin.pages.length}`);
      for (const p of admin.pages) {
        // HSCAN stops once it holds COUNT entries: a page exceeds it by at most the rest of one hash bucket's chain
        assert.ok(p.members.length <= 2 * limit, `a page of ${p.members.length}`);
        const users = p.members.map((m) => m.userId);
        assert.deepEqual(users, [...new Set(users)].sort(), "a page is by user id, without a repeat");
        assert.equal(p.version, 2);
        assert.equal(p.memberCount, active.size);
      }
      const byDefault = await fx.engine.listMembers({ tenant, group });
      assert.ok(byDefault.members.length <= 2 * REDIS_CALL_MEMBER_BUDGET && byDefault.members.length >= REDIS_CALL_MEMBER_BUDGET / 2, `the default page is the budget: ${byDefault.members.length}`);

      const asMember = await listAll({ tenant, group, asUser: members[100]!, limit: 250 });
      assert.deepEqual(new Set(asMember.seen.keys()), active, "a member sees the current members");
      await assert.rejects(fx.engine.listMembers({ tenant, group, asUser: removed[0]! }), PermissionDeniedError);
      await assert.rejects(fx.engine.listMembers({ tenant, group, asUser: randomUUID() }), PermissionDeniedError);
      await assert.rejects(fx.engine.listMembers({ tenant, group: randomUUID(), asUser: owner }), PermissionDeniedError);
      assert.equal(await hgetallCalls(fx.store.clients()[0]!, kind), statsBefore, "no HGETALL of the member table");
    });

    it("a small group comes whole on one page; bad limit and cursor are refused", async () => {
      const tenant = fx.tenant();
      const owner = randomUUID();
      const members = ids(5);
      const { group } = await fx.engine.createGroup({ tenant, owner, members });
      const page = await fx.engine.listMembers({ tenant, group, limit: 1 });
      assert.deepEqual(page.members.map((m) => m.userId), [owner, ...members].sort());
      assert.equal(page.nextCursor, "");
      await assert.rejects(fx.engine.listMembers({ tenant, group, limit: REDIS_CALL_MEMBER_BUDGET + 1 }), (e: unknown) => e instanceof InvalidArgumentError && e.field === "limit");
      await assert.rejects(fx.engine.listMembers({ tenant, group, limit: 0 }), (e: unknown) => e instanceof InvalidArgumentError && e.field === "limit");
      await assert.rejects(fx.engine.listMembers({ tenant, group, cursor: "12a" }), (e: unknown) => e instanceof InvalidArgumentError && e.field === "cursor");
    });
  });
}

/** How many HGETALL calls the instance served (INFO commandstats); a Cluster's nodes summed. */
async function hgetallCalls(client: import("../../core/index.js").RedisClient, kind: string): Promise<number> {
  const nodes = kind.startsWith("cluster") ? (client as import("ioredis").Cluster).nodes("master") : [client as import("ioredis").Redis];
  let n = 0;
  for (const node of nodes) {
    const m = /cmdstat_hgetall:calls=(\d+)/.exec(await node.info("commandstats"));
    n += m ? Number(m[1]) : 0;
  }
  return n;
}
