import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { describe, it } from "node:test";
import { VersionConflictError } from "../../core/index.js";
import { useEngine } from "./fixture.js";

/**
 * A change that names users already in the requested state commits an event for the others only,
 * and its idempotency id covers those others. Its retry (a lost answer, or the same change sent by
 * two clients at once, as the load test of issue 6 does) must still find that event: "duplicate"
 * with the same seq, not "noop" without one (nor a version conflict under expect_version).
 */
describe("a retry of a change that was partly a no-op", () => {
  const fx = useEngine("single");

  it("an add naming a member already in the group: the retry is the duplicate of the event", async () => {
    const tenant = fx.tenant();
    const owner = randomUUID();
    const a = randomUUID();
    const b = randomUUID();
    const c = randomUUID();
    const { group } = await fx.engine.createGroup({ tenant, owner, members: [a] });
    const first = await fx.engine.addMembers({ tenant, group, users: [a, b, c] });
    assert.equal(first.outcome, "committed");
    assert.deepEqual(first.changed, [b, c].sort());
    const before = await fx.digest(tenant, group);
    const retry = await fx.engine.addMembers({ tenant, group, users: [c, a, b] });
    assert.equal(retry.outcome, "duplicate");
    assert.equal(retry.eventConversationSeq, first.eventConversationSeq);
    assert.equal(retry.messageId, first.messageId);
    assert.equal(retry.idempotencyId, first.idempotencyId);
    assert.deepEqual(retry.changed, first.changed, "the users the event changed");
    const pinned = await fx.engine.addMembers({ tenant, group, users: [a, b, c], expectVersion: 1 });
    assert.equal(pinned.outcome, "duplicate", "the retry pinned to the version it was planned at");
    assert.equal(pinned.eventConversationSeq, first.eventConversationSeq);
    assert.equal(await fx.digest(tenant, group), before, "a duplicate writes nothing");
  });

  it("a remove naming a non-member: the retry is the duplicate of the event", async () => {
    const tenant = fx.tenant();
    const owner = randomUUID();
    const a = randomUUID();
    const stranger = randomUUID();
    const { group } = await fx.engine.createGroup({ tenant, owner, members: [a] });
    const first = await fx.engine.removeMembers({ tenant, group, users: [a, stranger] });
    assert.equal(first.outcome, "committed");
    const retry = await fx.engine.removeMembers({ tenant, group, users: [stranger, a] });
    assert.equal(retry.outcome, "duplicate");
    assert.equal(retry.eventConversationSeq, first.eventConversationSeq);
  });

  it("only the group's latest event, and only the same op: otherwise noop or a conflict as before", async () => {
    const tenant = fx.tenant();
    const owner = randomUUID();
    const [a, b, c] = [randomUUID(), randomUUID(), randomUUID()];
    const { group } = await fx.engine.createGroup({ tenant, owner, members: [a] });
    const first = await fx.engine.addMembers({ tenant, group, users: [a, b] });
    assert.equal(first.outcome, "committed");
    await fx.engine.addMembers({ tenant, group, users: [c] });
    // another event came after it: the state holds, nothing to do, but it is no longer the latest
    const later = await fx.engine.addMembers({ tenant, group, users: [a, b] });
    assert.equal(later.outcome, "noop");
    assert.equal(later.eventConversationSeq, null);
    // pinned to version 1, [a, b] would have changed [b], which that event did: still its duplicate
    // when nothing touched a or b since
    const pinned = await fx.engine.addMembers({ tenant, group, users: [a, b], expectVersion: 1 });
    assert.equal(pinned.outcome, "duplicate");
    assert.equal(pinned.eventConversationSeq, first.eventConversationSeq);
    // [a, c] at version 1 would have changed c, which no event at version 1 did
    await assert.rejects(fx.engine.addMembers({ tenant, group, users: [a, c], expectVersion: 1 }), VersionConflictError);
    // a user not in the requested state now: not a retry of anything
    await assert.rejects(fx.engine.addMembers({ tenant, group, users: [b, randomUUID()], expectVersion: 1 }), VersionConflictError);
  });
});
