/**
 * lua/conversation/commitAnchorEvent-7.lua and applyAnchorEvent-2.lua called raw (spec 003 §2.3,
 * issue 29): the event first (its own seq, the target's fields copied into it, ord=0, outbox and
 * vpending like a message, nothing written on a refusal), then the target's state (recalled: state R,
 * recall_event_conversation_seq, payload gone, out of the unread index; edited: state E, the
 * event's payload), each idempotent; and the summary's head passing by the events. Every expected
 * value is worked out by hand from the calls here.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { callScript, decodeHistoryEntry, encodeHistoryRest, hexToUuid, reactionWhoKey, uuidToHex } from "../../core/index.js";
import { Conv, hexId, hexIds, SCRIPT_KEYS, useRedis } from "./helpers.js";

const fx = useRedis();
const T0 = 1_800_000_000_000;
const ZERO = "0".repeat(32);

test("recall and edit at the Lua level: event first with its target's fields, then the state; refusals write nothing; both steps idempotent", async () => {
  const c = new Conv(fx);
  const [a, b] = hexIds(2) as [string, string];
  await c.createGroup(a, [a, b].sort());
  const k = c.keys;
  const rest = (sender: string, text: string, at: number, mentions: string[] = []) => encodeHistoryRest({
    messageId: hexToUuid(hexId()), senderId: hexToUuid(sender), kind: "normal", countsUnread: true, createdAt: at, contentType: "text/plain",
    payload: Buffer.from(text), mentions: mentions.map(hexToUuid),
  });
  const commit = (sender: string, r: string) => callScript(c.client, "commitMessages", SCRIPT_KEYS.commitMessages(k), [1, k.outboxRef, hexId(), sender, r]);
  // seq 1: a to b, mentioning b; seq 2: b
  assert.deepEqual((await commit(a, rest(a, "one", T0, [b]))).slice(1, 3), [0, 1]);
  assert.deepEqual((await commit(b, rest(b, "two", T0 + 10))).slice(1, 3), [0, 2]);
  const eventRest = (actor: string, ct: string, body: string) => encodeHistoryRest({
    messageId: hexToUuid(hexId()), senderId: hexToUuid(actor), kind: "control", countsUnread: false, createdAt: T0 + 1000, contentType: ct, payload: Buffer.from(body), orderNeutral: true,
  });
  const anchorKeys = [k.idem, k.grpmeta, k.grpmembers, k.cseq, k.hist, k.outbox, k.vpending];
  const anchor = (mode: string, cmid: string, actor: string, own: boolean, now: number, target: number, r: string) =>
    callScript(c.client, "commitAnchorEvent", anchorKeys, [mode, cmid, actor, own ? "1" : "0", now, 120_000, target, r, k.outboxRef]);
  // step 2 names its target's who hash (reactionWhoKey) by the target seq the event carries
  const apply = async (seq: number) => {
    const target = decodeHistoryEntry((await c.client.zrangebyscore(k.hist, seq, seq))[0]!).target!.conversationSeq;
    return callScript(c.client, "applyAnchorEvent", [k.hist, k.unreadidx, k.rxsum, reactionWhoKey(c.space, c.tenant, c.group, target)], [seq, target]);
  };
  const dump = async () => JSON.stringify(await Promise.all([c.client.zrange(k.hist, "0", "-1"), c.client.lrange(k.outbox, 0, -1), c.client.zrange(k.vpending, "0", "-1"), c.client.get(k.cseq), c.client.hgetall(k.idem)]));

  const before = await dump();
  const recallCmid = hexId();
  assert.deepEqual(await anchor("R", recallCmid, b, true, T0 + 1000, 1, eventRest(b, "qim.recall.v1", "")), [-21], "b is not seq 1's author");
  assert.deepEqual(await anchor("R", recallCmid, a, true, T0 + 120_001, 1, eventRest(a, "qim.recall.v1", "")), [-22, T0], "past the 2-minute window");
  assert.deepEqual(await anchor("R", recallCmid, a, true, T0 + 1000, 9, eventRest(a, "qim.recall.v1", "")), [-20], "no seq 9");
  assert.deepEqual(await anchor("R", recallCmid, hexId(), true, T0 + 1000, 1, eventRest(a, "qim.recall.v1", "")), [-2], "a stranger");
  assert.equal(await dump(), before, "no refusal wrote anything");

  // a recalls seq 1 within the window: event at seq 3 with seq 1's fields
  const ok = await anchor("R", recallCmid, a, true, T0 + 1000, 1, eventRest(a, "qim.recall.v1", ""));
  assert.deepEqual(ok.slice(0, 2), [0, 3]);
  const event = decodeHistoryEntry((await c.client.zrangebyscore(k.hist, 3, 3))[0]!);
  assert.deepEqual({ kind: event.kind, ct: event.contentType, neutral: event.orderNeutral, target: event.target }, {
    kind: "control", ct: "qim.recall.v1", neutral: true,
    target: { conversationSeq: 1, messageId: decodeHistoryEntry((await c.client.zrangebyscore(k.hist, 1, 1))[0]!).messageId, senderId: hexToUuid(a), countsUnread: true, mentions: [hexToUuid(b)] },
  });
  assert.deepEqual(await c.client.lrange(k.outbox, 0, -1), [`${k.outboxRef}|1`, `${k.outboxRef}|2`, `${k.outboxRef}|3`]);
  assert.deepEqual(await c.client.zrange(k.vpending, "0", "-1", "WITHSCORES"), ["1", "1", "2", "1", "3", "1"]);
  // step 1 alone (the process died): the target is untouched, still in the unread index
  assert.equal(decodeHistoryEntry((await c.client.zrangebyscore(k.hist, 1, 1))[0]!).state, undefined);
  assert.deepEqual(await c.client.zrangebyscore(k.unreadidx, 1, 1), [`1|${a}|${b}`]);
  // a retry of step 1 answers the event; step 2 applies once
  assert.deepEqual((await anchor("R", recallCmid, a, true, T0 + 2000, 1, eventRest(a, "qim.recall.v1", ""))).slice(0, 2), [1, 3]);
  assert.deepEqual(await apply(3), [0]);
  const recalled = decodeHistoryEntry((await c.client.zrangebyscore(k.hist, 1, 1))[0]!);
  assert.deepEqual([recalled.state, recalled.recallEventSeq, recalled.payload.length, recalled.senderId, recalled.mentions], ["recalled", 3, 0, hexToUuid(a), [hexToUuid(b)]]);
  assert.deepEqual(await c.client.zrangebyscore(k.unreadidx, 1, 1), [], "a recalled message leaves the unread index");
  assert.deepEqual(await apply(3), [1], "step 2 again: already");
  // another recall id for the recalled message (a moderator): its recall event, nothing new
  assert.deepEqual(await anchor("R", hexId(), ZERO, false, T0 + 999_999, 1, eventRest(ZERO, "qim.recall.v1", "")), [1, 3, ""]);

  // b edits seq 2 (own, within 15 min): event at seq 4 carries the new text; step 2 replaces the payload
  const edit = await anchor("E", hexId(), b, true, T0 + 60_000, 2, eventRest(b, "qim.edit.v1", "two, edited"));
  assert.deepEqual(edit.slice(0, 2), [0, 4]);
  assert.deepEqual(await apply(4), [0]);
  const edited = decodeHistoryEntry((await c.client.zrangebyscore(k.hist, 2, 2))[0]!);
  assert.deepEqual([edited.state, edited.editEventSeq, Buffer.from(edited.payload).toString()], ["edited", 4, "two, edited"]);
  assert.deepEqual(await anchor("E", hexId(), a, false, T0, 1, eventRest(ZERO, "qim.edit.v1", "x")), [-23], "a recalled message is not edited");
  assert.deepEqual(await anchor("E", hexId(), a, true, T0, 3, eventRest(a, "qim.edit.v1", "x")), [-20], "an event is no target");

  // the summary's head passes by the events (seq 3, 4): b's head is seq 2 (edited), unread counts up to 4: seq 1 recalled, 2 b's own → 0
  const summary = await c.run("conversationSummary", [b, 200, 0, 0]);
  assert.equal(decodeHistoryEntry(String(summary[5])).conversationSeq, 2);
  assert.deepEqual([summary[6], summary[7]], [0, 1]);
  // history older than the unread index is read entry by entry: a recalled entry does not count there either
  const from = await c.client.hget(k.grpmeta, "unread_index_from");
  await c.client.hset(k.grpmeta, "unread_index_from", 100);
  assert.deepEqual((await c.run("conversationSummary", [b, 200, 0, 0])).slice(6, 8), [0, 1], "seq 1 recalled, seq 2 b's own: 0 from the entries too");
  await c.client.hset(k.grpmeta, "unread_index_from", from!);
  // a's view: seq 2 counts (b's), seq 1 was a's own
  const forA = await c.run("conversationSummary", [a, 200, 0, 0]);
  assert.deepEqual([decodeHistoryEntry(String(forA[5])).conversationSeq, forA[6]], [2, 1]);
  assert.equal(uuidToHex(edited.senderId), b);
});
