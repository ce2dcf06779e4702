/**
 * The message record (issue 25, docs/architecture.md "The message record") through every reader
 * of the engine on a real redis-server: history, the conversation summary, the list's unread
 * recompute, the relay's dispatch records with the list consumer's and the session projection's
 * reading of them, and the list row they make.
 *   1. Entries in the OLD positional layout, as the code before issue 25 wrote them (hand-written
 *      strings), mixed in one history with entries the engine writes now, read as the same named
 *      records: old entries are read forever, never migrated.
 *   2. Adding a field touches no reader: an entry rewritten through the Lua include with fields
 *      no reader knows (what a later recall does), and one committed with such a field, read by
 *      every reader exactly as before, the unknown fields surviving a decode + encode.
 * Expected values are worked out by hand from what the test wrote.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import {
  callScript, decodeHistoryEntry, encodeHistoryEntry, encodeHistoryRest, inHandEntry, inlineIncludes, LOG_START, newUuid, userKeys, uuidToHex,
  type DispatchRecord, type LogPosition, type RowPrefs, type Uuid,
} from "../../core/index.js";
import { useList } from "./conversation-list/fixture.js";

const LUA_DIR = fileURLToPath(new URL("../../../lua", import.meta.url));
const PREFS: RowPrefs = { hidden: 0, deleted: 0, deletedBeforeSet: false, pinRank: null, muted: false, archived: false };
const b64 = (s: string) => Buffer.from(s).toString("base64");

describe("the message record through every reader", () => {
  const fx = useList("single");

  const world = async () => {
    const tenant = fx.tenant();
    const [owner, u, b] = [newUuid(), newUuid(), newUuid()];
    const { group } = await fx.engine.conversations.createGroup({ tenant, owner, members: [u, b] });
    const k = fx.engine.conversations.conversationKeys(tenant, group);
    const client = fx.store.clientFor(k.tag);
    const hex = { owner: uuidToHex(owner), u: uuidToHex(u), b: uuidToHex(b), group: uuidToHex(group) };
    return { tenant, owner, u, b, group, k, client, hex };
  };
  type World = Awaited<ReturnType<typeof world>>;

  /** What each reader makes of the conversation for `user`, in plain values. */
  const readers = async (w: World, user: Uuid) => {
    const page = await fx.engine.conversations.history({ tenant: w.tenant, group: w.group, user });
    const summary = await fx.engine.conversations.conversationSummary({ tenant: w.tenant, group: w.group, user });
    const rc = await fx.engine.conversationList.service.recompute(w.tenant, user, w.hex.group, PREFS, null, "test");
    return {
      history: page.records.map((r) => [r.conversationSeq, uuidToHex(r.messageId), uuidToHex(r.senderId), r.kind, r.countsUnread, r.createdAt, r.contentType,
        Buffer.from(r.payload).toString(), (r.mentions ?? []).map(uuidToHex).join("")]),
      summary: [summary.head?.conversationSeq, summary.head && uuidToHex(summary.head.messageId), summary.unread, summary.unreadExact],
      recompute: [rc!.lastActivitySeq, rc!.lastActivityId, rc!.lastActivityAt, rc!.unread, rc!.unreadExact, rc!.mentions, rc!.mentionFirst],
    };
  };

  /** The conversation's dispatch records, in log order. */
  const dispatched = async (w: World): Promise<DispatchRecord[]> => {
    const p = fx.engine.dispatchLog.partitionOf(w.tenant, w.group);
    const out: DispatchRecord[] = [];
    let from: LogPosition = LOG_START;
    for (;;) {
      const { entries } = await fx.engine.dispatchLog.readFrom(p, from, 500);
      if (entries.length === 0) return out.filter((r) => r.conversation === w.group);
      out.push(...entries.map((e) => e.record));
      const last = entries[entries.length - 1]!;
      from = { offset: last.offset + 1, id: last.id };
    }
  };

  const hist = async (w: World) => (await w.client.zrange(w.k.hist, "0", "-1"));

  it("old positional entries, as the code before issue 25 wrote them, read as the same records beside new ones in one history", async () => {
    const w = await world();
    const { owner: O, u: U, b: B } = w.hex;
    const [m1, m2, m3, m4] = [newUuid(), newUuid(), newUuid(), newUuid()].map(uuidToHex);
    // 1–3: history from before the unread index (issue 22), written raw as the old code left it
    // (dispatched long ago: no outbox entry); 2 mentions u (the old layout's field 9, after the body)
    const old = [
      `1|${m1}|${O}|N|1|1600000000001|text/plain|${b64("one")}`,
      `2|${m2}|${O}|N|1|1600000000002|text/plain|${b64("two")}|${U}`,
      `3|${m3}|${B}|N|1|1600000000003|text/plain|${b64("three")}`,
    ];
    for (const [i, e] of old.entries()) await w.client.zadd(w.k.hist, i + 1, e);
    await w.client.set(w.k.cseq, 3);
    // 4: an old writer's message in flight at the upgrade (its old-layout rest, b mentions u),
    // committed by the script: it goes through the outbox and the unread index starts at it
    const rest4 = `${m4}|${B}|N|1|1600000000004|text/plain|${b64("four")}|${U}`;
    const k = w.k;
    const c4 = await callScript(w.client, "commitMessages", [k.idem, k.grpmeta, k.grpmembers, k.cseq, k.hist, k.outbox, k.vpending, k.unreadidx], [1, k.outboxRef, uuidToHex(newUuid()), B, rest4]);
    assert.deepEqual(c4, [0, 0, 4, m4]);
    // 5, 6: written by this code (owner mentions u; u's own message)
    const s5 = await fx.engine.conversations.send({ tenant: w.tenant, group: w.group, sender: w.owner, text: "five", mentions: [w.u] });
    const at5 = fx.msgClock.now;
    const s6 = await fx.engine.conversations.send({ tenant: w.tenant, group: w.group, sender: w.u, text: "six" });
    const at6 = fx.msgClock.now;
    const [m5, m6] = [uuidToHex(s5.messageId!), uuidToHex(s6.messageId!)];

    // one zset, both layouts
    const stored = await hist(w);
    assert.deepEqual(stored.slice(0, 4), [...old, `4|${rest4}`]);
    assert.deepEqual(stored.slice(4).map((e) => e.slice(0, 5)), ["5|v2|", "6|v2|"]);

    const rows = [
      [1, m1, O, "normal", true, 1600000000001, "text/plain", "one", ""],
      [2, m2, O, "normal", true, 1600000000002, "text/plain", "two", U],
      [3, m3, B, "normal", true, 1600000000003, "text/plain", "three", ""],
      [4, m4, B, "normal", true, 1600000000004, "text/plain", "four", U],
      [5, m5, O, "normal", true, at5, "text/plain", "five", U],
      [6, m6, U, "normal", true, at6, "text/plain", "six", ""],
    ];
    // u: head 6 (u's own); unread 1–5 (others', counting) = 5; mentions at 2 (old, from hist), 4 (old, from the index), 5 (new)
    assert.deepEqual(await readers(w, w.u), {
      history: rows,
      summary: [6, m6, 5, true],
      recompute: [6, m6, at6, 5, true, 3, 2],
    });
    // read up to 3: across the boundary of the index, 4 and 5 count, both mention u
    await fx.engine.conversations.markRead({ tenant: w.tenant, group: w.group, user: w.u, seq: 3 });
    const afterRead = await readers(w, w.u);
    assert.deepEqual([afterRead.summary, afterRead.recompute], [[6, m6, 2, true], [6, m6, at6, 2, true, 2, 4]]);
    // b: 1, 2, 5 (owner's) and 6 (u's) count, 3 and 4 are b's own; no mention of b
    assert.deepEqual((await readers(w, w.b)).recompute, [6, m6, at6, 4, true, 0, null]);

    // dispatch: 4–6 went through the outbox; each record carries the stored entry, read alike
    await fx.engine.relay.drainAll();
    const records = await dispatched(w);
    assert.deepEqual(records.map((r) => r.conversationSeq), [4, 5, 6]);
    assert.deepEqual(records.map((r) => r.entry), stored.slice(3));
    assert.deepEqual(records.map((r) => { const h = inHandEntry(r); return [h.seq, h.messageId, h.senderHex, h.control, h.countsUnread, h.createdAt, h.mentionsHex]; }), [
      [4, m4, B, false, true, 1600000000004, U],
      [5, m5, O, false, true, at5, U],
      [6, m6, U, false, true, at6, ""],
    ]);
    assert.deepEqual(records.map((r) => decodeHistoryEntry(r.entry).conversationSeq), [4, 5, 6]);
    // the list row the consumer makes from them (b has read nothing)
    await fx.settle();
    const row = await fx.engine.conversationList.service.row(w.tenant, w.b, w.group);
    assert.deepEqual([row!.lastActivitySeq, row!.lastActivityId, row!.lastActivityAt, row!.unread, row!.mentions], [6, m6, at6, 4, 0]);
    // the session projection ranked the conversation by the newest record's created_at
    const ub = userKeys(fx.engine.keys, w.tenant, w.b);
    assert.equal(Number(await fx.store.clientFor(ub.tag).zscore(ub.convs, w.hex.group)), at6);
    // nothing rewrote the old entries
    assert.deepEqual((await hist(w)).slice(0, 4), stored.slice(0, 4));
  });

  it("a field no reader knows, added through the Lua include or by the writer, changes no reader's answer and survives a decode + encode", async () => {
    const w = await world();
    const s1 = await fx.engine.conversations.send({ tenant: w.tenant, group: w.group, sender: w.owner, text: "one", mentions: [w.u] });
    const at1 = fx.msgClock.now;
    const s2 = await fx.engine.conversations.send({ tenant: w.tenant, group: w.group, sender: w.b, text: "two" });
    const at2 = fx.msgClock.now;
    const [m1, m2] = [uuidToHex(s1.messageId!), uuidToHex(s2.messageId!)];
    const before = { u: await readers(w, w.u), owner: await readers(w, w.owner) };
    // by hand: u sees 1 (mentions u) and 2, both others'; owner sees 2 only
    assert.deepEqual(before.u.recompute, [2, m2, at2, 2, true, 1, 1]);
    assert.deepEqual(before.owner.summary, [2, m2, 1, true]);

    // rewrite seq 1 in place with two fields no reader knows, as a later recall script would:
    // decode, set, encode (ONE include; fields a script adds go after the known ones, by name),
    // nothing else of the scripts touched
    const rewrite = inlineIncludes(LUA_DIR, `--- @include "includes/histRecord"
local old = redis.call("ZRANGEBYSCORE", KEYS[1], ARGV[1], ARGV[1])[1]
local rec = histDecode(old)
rec.fields.xstate = "R"
rec.fields.xevent_seq = "9"
redis.call("ZREM", KEYS[1], old)
redis.call("ZADD", KEYS[1], ARGV[1], histEncode(rec))
return histEncode(rec)`, "rewrite.test");
    const e1 = await w.client.eval(rewrite, 1, w.k.hist, 1) as string;
    assert.ok(e1.startsWith(`1|v2|id=${m1}|`) && e1.includes("|xevent_seq=9|xstate=R\n"), e1);
    // 3: a message the writer encodes with a field this code does not know, committed by the script
    const m3 = newUuid();
    const rest3 = encodeHistoryRest({
      messageId: m3, senderId: w.u, kind: "normal", countsUnread: true, createdAt: 1800000000000, contentType: "text/plain", payload: Buffer.from("three"),
      otherFields: new Map([["xcustom", "poll"]]),
    });
    const k = w.k;
    assert.deepEqual(await callScript(w.client, "commitMessages", [k.idem, k.grpmeta, k.grpmembers, k.cseq, k.hist, k.outbox, k.vpending, k.unreadidx], [1, k.outboxRef, uuidToHex(newUuid()), w.hex.u, rest3]),
      [0, 0, 3, uuidToHex(m3)]);

    // every reader answers as before for 1–2, and 3 is read as any message
    const row3 = [3, uuidToHex(m3), w.hex.u, "normal", true, 1800000000000, "text/plain", "three", ""];
    const afterU = await readers(w, w.u);
    assert.deepEqual(afterU.history, [...before.u.history, row3]);
    // u: 3 is u's own: unread and mentions as before, the head moves to 3
    assert.deepEqual(afterU.recompute, [3, uuidToHex(m3), 1800000000000, 2, true, 1, 1]);
    const afterOwner = await readers(w, w.owner);
    assert.deepEqual(afterOwner.summary, [3, uuidToHex(m3), 2, true]);

    // the fields survive: the stored entries decode with them and encode back to themselves, in both languages
    const stored = await hist(w);
    assert.equal(stored[0], e1);
    assert.deepEqual([...decodeHistoryEntry(stored[0]!).otherFields!], [["xevent_seq", "9"], ["xstate", "R"]]);
    assert.deepEqual([...decodeHistoryEntry(stored[2]!).otherFields!], [["xcustom", "poll"]]);
    for (const e of stored) assert.equal(encodeHistoryEntry(decodeHistoryEntry(e)), e);
    const roundTrip = inlineIncludes(LUA_DIR, `--- @include "includes/histRecord"
return histEncode(histDecode(ARGV[1]))`, "roundtrip.test");
    for (const e of stored) assert.equal(await w.client.eval(roundTrip, 0, e), e);

    // dispatch and the consumers read the rewritten and the new entry like any other
    await fx.engine.relay.drainAll();
    const records = await dispatched(w);
    assert.deepEqual(records.map((r) => r.entry), stored);
    assert.deepEqual(records.map((r) => { const h = inHandEntry(r); return [h.seq, h.messageId, h.senderHex, h.countsUnread, h.createdAt, h.mentionsHex]; }), [
      [1, m1, w.hex.owner, true, at1, w.hex.u],
      [2, m2, w.hex.b, true, at2, ""],
      [3, uuidToHex(m3), w.hex.u, true, 1800000000000, ""],
    ]);
    await fx.settle();
    const row = await fx.engine.conversationList.service.row(w.tenant, w.u, w.group);
    assert.deepEqual([row!.lastActivitySeq, row!.unread, row!.mentions, row!.mentionFirstSeq], [3, 2, 1, 1]);
  });
});
