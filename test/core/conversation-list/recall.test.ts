/**
 * Recall and edit through the whole engine on a real redis-server (issue 29, spec 002 J-4, spec 003
 * §2.3): the relay, the projection and the conversation list consume the events. Unread per user
 * is worked out by hand below from the sends, reads and recalls, step by step; the live row, the
 * stored row after a flush and the definitional row (reconcile) must all say it.
 *   group: a (owner), b, c
 *   seq 1 a | seq 2 b, mentions a | seq 3 b | seq 4 a        → a: 2 (mention 1), b: 2, c: 4
 *   a reads to 2                                            → a: 1 (mention 0)
 *   seq 5: a recalls seq 4 (a's own)                        → a: 1 (J-4: unchanged), b: 1, c: 3
 *   seq 6: b recalls seq 3                                  → a: 0, b: 1 (own), c: 2
 *   seq 7: moderator recalls seq 2 (≤ a's base 2)           → a: 0 (never negative), b: 1, c: 1
 *   seq 8: a edits seq 1                                    → nobody's unread changes
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { FailedPreconditionError, newUuid, NotFoundError, parseDeclaration, PermissionDeniedError, type Uuid } from "../../../core/index.js";
import { useList } from "./fixture.js";

describe("recall and edit in the conversation list", () => {
  const fx = useList("single");

  test("J-4: a recall lowers others' unread by §3.5 and never the author's; rows, stored rows and the definition agree; the preview stays at the target", async () => {
    const tenant = fx.tenant();
    const [a, b, c] = [newUuid(), newUuid(), newUuid()];
    const conv = fx.engine.conversations;
    const list = fx.engine.conversationList.service;
    const { group } = await conv.createGroup({ tenant, owner: a, members: [b, c] });
    await conv.send({ tenant, group, sender: a, text: "1" });
    await conv.send({ tenant, group, sender: b, text: "2", mentions: [a] });
    await conv.send({ tenant, group, sender: b, text: "3" });
    await conv.send({ tenant, group, sender: a, text: "4" });
    await fx.deliver();
    await conv.markRead({ tenant, group, user: a, seq: 2 });

    const expect = async (step: string, want: Record<string, [number, number]>, activitySeq: number) => {
      const who: [string, Uuid][] = [["a", a], ["b", b], ["c", c]];
      for (const [name, u] of who) {
        const live = await list.row(tenant, u, group);
        assert.deepEqual([live?.unread, live?.mentions], want[name], `${step}: ${name}'s live row`);
        assert.equal(live?.lastActivitySeq, activitySeq, `${step}: ${name}'s activity stays at a message, not an event`);
      }
      await fx.settle();
      for (const [name, u] of who) assert.deepEqual([(await list.row(tenant, u, group))?.unread, (await list.row(tenant, u, group))?.mentions], want[name], `${step}: ${name}'s stored row`);
      // the definition (reconcile recomputes from the authority) agrees
      for (const [name, u] of who) {
        await list.reconcile(tenant, u);
        const r = await list.row(tenant, u, group);
        assert.deepEqual([r?.unread, r?.mentions, r?.lastActivitySeq], [...want[name]!, activitySeq], `${step}: ${name}'s definitional row`);
        const s = await conv.conversationSummary({ tenant, group, user: u });
        assert.deepEqual([s.unread, s.head?.conversationSeq], [want[name]![0], activitySeq], `${step}: ${name}'s summary`);
      }
    };
    await expect("before", { a: [1, 0], b: [2, 0], c: [4, 0] }, 4);

    const r5 = await conv.recall({ tenant, group, seq: 4, user: a });
    await fx.deliver();
    assert.deepEqual([r5.eventSeq, r5.duplicate, r5.moderation], [5, false, false]);
    await expect("a recalls own seq 4", { a: [1, 0], b: [1, 0], c: [3, 0] }, 4);

    const r6 = await conv.recall({ tenant, group, seq: 3, user: b });
    await fx.deliver();
    assert.equal(r6.eventSeq, 6);
    await expect("b recalls seq 3", { a: [0, 0], b: [1, 0], c: [2, 0] }, 4);

    const r7 = await conv.recall({ tenant, group, seq: 2, reason: "spam" });
    await fx.deliver();
    assert.deepEqual([r7.eventSeq, r7.moderation], [7, true]);
    await expect("a moderator recalls seq 2", { a: [0, 0], b: [1, 0], c: [1, 0] }, 4);

    const r8 = await conv.edit({ tenant, group, seq: 1, user: a, text: "1, edited" });
    await fx.deliver();
    assert.equal(r8.eventSeq, 8);
    await expect("a edits seq 1", { a: [0, 0], b: [1, 0], c: [1, 0] }, 4);

    // a second recall of seq 4 answers the first event; history shows the states
    assert.deepEqual(await conv.recall({ tenant, group, seq: 4, user: a }).then((r) => [r.eventSeq, r.duplicate]), [5, true]);
    // a moderator's recall of the message its author recalled: the same event, not a conflict
    assert.deepEqual(await conv.recall({ tenant, group, seq: 4, reason: "reported too" }).then((r) => [r.eventSeq, r.duplicate]), [5, true]);
    const page = await conv.history({ tenant, group, user: c });
    assert.deepEqual(page.records.map((r) => [r.conversationSeq, r.state ?? null, r.target?.conversationSeq ?? null, Buffer.from(r.payload).toString()]), [
      [1, "edited", null, "1, edited"], [2, "recalled", null, ""], [3, "recalled", null, ""], [4, "recalled", null, ""],
      [5, null, 4, ""], [6, null, 3, ""], [7, null, 2, ""], [8, null, 1, "1, edited"],
    ]);
  });

  test("refusals: another's message, past the window, no such message, a recalled message's edit, no reason for a moderator — nothing written", async () => {
    const tenant = fx.tenant();
    const [a, b] = [newUuid(), newUuid()];
    const conv = fx.engine.conversations;
    const { group } = await conv.createGroup({ tenant, owner: a, members: [b] });
    await conv.send({ tenant, group, sender: a, text: "hello" });
    const k = conv.conversationKeys(tenant, group);
    const cseq = () => fx.store.clientFor(k.tag).get(k.cseq);
    await assert.rejects(conv.recall({ tenant, group, seq: 1, user: b }), PermissionDeniedError);
    await assert.rejects(conv.recall({ tenant, group, seq: 9, user: a }), NotFoundError);
    await assert.rejects(conv.recall({ tenant, group, seq: 1 }), /reason/);
    await assert.rejects(conv.recall({ tenant, group: newUuid(), seq: 1, user: a }), PermissionDeniedError);
    // past the window: the message clock moves 2 min + 1 ms on
    fx.msgClock.now += 120_001;
    await assert.rejects(conv.recall({ tenant, group, seq: 1, user: a }), (e: unknown) => e instanceof FailedPreconditionError && /recall_self_window/.test(e.message));
    assert.equal(await cseq(), "1", "no refusal took a seq");
    // within edit_self_window (15 min) still: an edit works; a moderator recalls without window
    assert.equal((await conv.edit({ tenant, group, seq: 1, user: a, text: "hello!" })).eventSeq, 2);
    assert.equal((await conv.recall({ tenant, group, seq: 1, reason: "reported" })).eventSeq, 3);
    await assert.rejects(conv.edit({ tenant, group, seq: 1, user: a, text: "again" }), (e: unknown) => e instanceof FailedPreconditionError && /recalled/.test(e.message));
    assert.equal(await cseq(), "3");
  });

  test("affects_session_order false: a declared type's message counts toward unread but moves no conversation (activity, summary head, projection order), by hand", async () => {
    const tenant = fx.tenant();
    const [a, b] = [newUuid(), newUuid()];
    const conv = fx.engine.conversations;
    const list = fx.engine.conversationList.service;
    await fx.engine.messageTypes.apply({ tenant, put: [parseDeclaration({ custom_type: "acme.bot.v1", affects_session_order: false }, "t")], delete: [] });
    const { group: g1 } = await conv.createGroup({ tenant, owner: a, members: [b] });
    const { group: g2 } = await conv.createGroup({ tenant, owner: a, members: [b] });
    // g1 seq 1 text; g2 seq 1 text (newer); g1 seq 2, 3 bot messages (newest, but order-neutral)
    await conv.send({ tenant, group: g1, sender: a, text: "g1" });
    await conv.send({ tenant, group: g2, sender: a, text: "g2" });
    for (const i of [1, 2]) await conv.send({ tenant, group: g1, sender: a, payload: new Uint8Array([i]), contentType: "acme.bot.v1" });
    await fx.settle();
    const r1 = await list.row(tenant, b, g1);
    assert.deepEqual([r1?.unread, r1?.lastActivitySeq, r1?.headSeq], [3, 1, 3], "b's g1: three unread, activity still seq 1");
    const s1 = await conv.conversationSummary({ tenant, group: g1, user: b });
    assert.deepEqual([s1.unread, s1.head?.conversationSeq], [3, 1]);
    // the session projection's order: g2 (its text is newer than g1's) first, though g1 holds the newest record
    const sessions = await fx.engine.projection.sessions.listSessions({ tenant, user: b, limit: 10 });
    assert.deepEqual(sessions.sessions.map((x) => x.group), [g2, g1]);
    await list.reconcile(tenant, b);
    assert.deepEqual([(await list.row(tenant, b, g1))?.unread, (await list.row(tenant, b, g1))?.lastActivitySeq], [3, 1], "the definition agrees");
  });
});
