import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  CmdLog, FailedPreconditionError, NotFoundError, VersionConflictError, ZERO_UUID, newUuid,
} from "../../core/index.js";
import { useEngine } from "./fixture.js";

/**
 * `group dissolve` through the engine (ConversationService.dissolveGroup) on a real redis-server:
 * plan, compare-and-set, the one event and its audience through the real relay, the re-run, every
 * refusal after it, and what members read. The scenario, worked out by hand:
 *   owner, a, b from the start (version 1) | 1 a sends | 2 b leaves (version 2) | 3 dissolve (version 3)
 */
describe("group dissolve in the engine", () => {
  const fx = useEngine("single");

  async function scenario() {
    const tenant = fx.tenant();
    const [owner, a, b] = [newUuid(), newUuid(), newUuid()];
    const { group } = await fx.engine.createGroup({ tenant, owner, members: [a, b] });
    await fx.engine.send({ tenant, group, sender: a, text: "before" });
    await fx.engine.leaveGroup({ tenant, group, user: b });
    return { tenant, group, owner, a, b };
  }

  it("plans without writing, refuses a stale --expect-version, dissolves once, and a re-run says it already was", async () => {
    const { tenant, group, owner } = await scenario();
    const before = await fx.digest(tenant, group);
    const plan = await fx.engine.dissolveGroup({ tenant, group, dryRun: true });
    assert.deepEqual(plan, { tenant, group, outcome: "planned", owner, memberCount: 2, version: 2, dissolvedAt: null, messageId: null, attempts: 1 });
    await assert.rejects(fx.engine.dissolveGroup({ tenant, group, expectVersion: 1 }), VersionConflictError);
    await assert.rejects(fx.engine.dissolveGroup({ tenant, group: newUuid() }), NotFoundError);
    assert.equal(await fx.digest(tenant, group), before, "the plan and the refusals wrote nothing");

    const done = await fx.engine.dissolveGroup({ tenant, group, expectVersion: 2 });
    assert.equal(done.outcome, "committed");
    assert.deepEqual({ ...done, messageId: null }, { tenant, group, outcome: "committed", owner, memberCount: 2, version: 3, dissolvedAt: 3, messageId: null, attempts: 1 });
    const g = await fx.engine.getGroup(tenant, group);
    assert.deepEqual({ state: g.state, dissolvedAt: g.dissolvedAt, version: g.version, conversationSeq: g.conversationSeq, memberCount: g.memberCount },
      { state: "DISSOLVED", dissolvedAt: 3, version: 3, conversationSeq: 3, memberCount: 2 });
    const listed = (await fx.engine.listGroups({ tenant })).groups;
    assert.deepEqual(listed.map((l) => [l.group, l.state, l.dissolvedAt]), [[group, "DISSOLVED", 3]]);

    const afterIt = await fx.digest(tenant, group);
    for (const again of [{}, { expectVersion: 2 }, { dryRun: true }]) {
      const r = await fx.engine.dissolveGroup({ tenant, group, ...again });
      assert.deepEqual(r, { ...done, outcome: "noop" }, `re-run ${JSON.stringify(again)}`);
    }
    assert.equal(await fx.digest(tenant, group), afterIt, "a re-run writes no second event");
  });

  it("the event goes to the members at the dissolve through the relay; members read up to it, who left before up to their own bound", async () => {
    const { tenant, group, owner, a, b } = await scenario();
    const done = await fx.engine.dissolveGroup({ tenant, group });
    await fx.relay.drainAll();
    const records = (await fx.dispatched()).map((e) => e.record).filter((r) => r.conversation === group);
    const event = records.find((r) => r.conversationSeq === 3)!;
    assert.deepEqual(event.recipients.sort(), [owner, a].sort());
    assert.equal(event.version, 3);

    const page = await fx.engine.history({ tenant, group, user: a });
    assert.deepEqual(page.records.map((r) => [r.conversationSeq, r.kind]), [[1, "normal"], [2, "control"], [3, "control"]]);
    const last = page.records[2]!;
    assert.deepEqual({ id: last.messageId, sender: last.senderId, type: last.contentType, unread: last.countsUnread, body: last.groupEvent },
      { id: done.messageId, sender: owner, type: "qim.group.v1", unread: false, body: { op: 1, actor: ZERO_UUID } });
    assert.deepEqual((await fx.engine.history({ tenant, group, user: b })).records.map((r) => r.conversationSeq), [1]);
    const summary = await fx.engine.conversationSummary({ tenant, group, user: owner });
    assert.deepEqual({ head: summary.head?.conversationSeq, unread: summary.unread }, { head: 3, unread: 1 }, "a's message counts; control messages never do");
    assert.deepEqual(await fx.engine.markRead({ tenant, group, user: owner, seq: 99 }), { readConversationSeq: 3 });
    const members = await fx.engine.listMembers({ tenant, group });
    assert.deepEqual(members.members.map((m) => [m.userId, m.state]).sort(), [[owner, "ACTIVE"], [a, "ACTIVE"], [b, "LEFT"]].sort(), "the admin list still answers");
  });

  it("after the dissolve: send, add, remove, leave, transfer-owner and a CMD to the group are refused, nothing written", async () => {
    const { tenant, group, owner, a } = await scenario();
    await fx.engine.dissolveGroup({ tenant, group });
    const before = await fx.digest(tenant, group);
    const refused = (e: unknown) => e instanceof FailedPreconditionError && e.message === `group ${group} was dissolved at conversation_seq 3` && e.details.reason === "GROUP_DISSOLVED";
    await assert.rejects(fx.engine.send({ tenant, group, sender: a, text: "after" }), refused);
    await assert.rejects(fx.engine.addMembers({ tenant, group, users: [newUuid()] }), refused);
    await assert.rejects(fx.engine.addMembers({ tenant, group, users: [a] }), refused, "even an add that would change nothing");
    await assert.rejects(fx.engine.removeMembers({ tenant, group, users: [a] }), refused);
    await assert.rejects(fx.engine.leaveGroup({ tenant, group, user: a }), refused);
    await assert.rejects(fx.engine.transferOwner({ tenant, group, to: a }), refused);
    await assert.rejects(fx.engine.transferOwner({ tenant, group, to: owner }), refused);
    const cmd = new CmdLog(fx.store, fx.engine.keys, {});
    for (const noPersist of [false, true]) {
      await assert.rejects(cmd.commit({ tenant, channelId: `${group}____cmd`, channelType: 2, from: null, to: null, noPersist, payload: new Uint8Array([1]) }), refused, `CMD noPersist=${noPersist}`);
    }
    assert.equal(await fx.digest(tenant, group), before);
  });
});
