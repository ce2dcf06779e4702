/**
 * The room ring buffer and room_seq (spec 003 §1.2–§1.4, ADR-0007), pure: every expected value is
 * worked out by hand here — the seq as epoch·2^48 + counter, which cursors are continued, which
 * are truncated, what the count cap and the age evict, and how a node merges a frame interval's
 * windows.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { epochOfToken, mergeWindows, RoomRing, roomSeq, splitRoomSeq, type RoomWindow, type Uuid } from "../../../core/index.js";

const E = 2n ** 48n;
const rec = (at: number) => ({ messageId: `m${at}`, sender: "00000000-0000-4000-8000-000000000001" as Uuid, senderDevice: "d", createdAt: at, contentType: "text/plain", payload: Buffer.from(`x${at}`) });

describe("room_seq", () => {
  it("is (epoch << 48) | counter, and splits back", () => {
    assert.equal(roomSeq(1, 1), E + 1n);
    assert.equal(roomSeq(3, 7), 3n * E + 7n);
    assert.equal(roomSeq(65535, 2 ** 48 - 1), 65536n * E - 1n);
    assert.deepEqual(splitRoomSeq(3n * E + 7n), { epoch: 3, counter: 7 });
    // a later epoch's first seq is above every seq of an earlier one: no order inversion across a restart
    assert.ok(roomSeq(4, 1) > roomSeq(3, 2 ** 48 - 1));
  });

  it("takes its epoch from the lease token: 1 … 65535, wrapping past it", () => {
    assert.deepEqual([1, 2, 65535, 65536, 65537].map(epochOfToken), [1, 2, 65535, 1, 2]);
    assert.equal(epochOfToken(0), 1, "a unit never taken (token 0) still gets epoch 1");
  });
});

describe("RoomRing", () => {
  it("gives contiguous seqs and replays after a cursor in pages", () => {
    const r = new RoomRing(5, 100, 60_000);
    assert.equal(r.latest, 5n * E, "before the first message: counter 0");
    assert.equal(r.earliest, 5n * E + 1n, "empty: latest + 1");
    for (let i = 1; i <= 5; i++) assert.equal(r.append(rec(1000 + i)).roomSeq, 5n * E + BigInt(i));
    assert.equal(r.earliest, 5n * E + 1n);
    assert.equal(r.latest, 5n * E + 5n);
    const p = r.replay(5n * E + 2n, 2, 2000);
    assert.deepEqual(p.events.map((e) => e.roomSeq), [5n * E + 3n, 5n * E + 4n]);
    assert.equal(p.more, true);
    assert.equal(p.truncated, false);
    const q = r.replay(5n * E + 4n, 10, 2000);
    assert.deepEqual(q.events.map((e) => e.messageId), ["m1005"]);
    assert.equal(q.more, false);
    // at latest: nothing, not truncated; from before the first (counter 0 of the epoch): everything
    assert.deepEqual(r.replay(5n * E + 5n, 10, 2000), { events: [], truncated: false, more: false });
    assert.equal(r.replay(5n * E, 10, 2000).events.length, 5);
  });

  it("finds a kept message by its id (a retry), and forgets it when it is evicted", () => {
    const ring = new RoomRing(1, 2, 60_000);
    const rec = (id: string, at: number) => ({ messageId: id, sender: "u" as never, senderDevice: "d", createdAt: at, contentType: "text/plain", payload: new Uint8Array([1]) });
    const a = ring.append(rec("a", 1));
    ring.append(rec("b", 2));
    assert.equal(ring.find("a"), a);
    assert.equal(ring.find("z"), undefined);
    ring.append(rec("c", 3));
    // the cap is 2: a is gone, and so is its id
    assert.equal(ring.find("a"), undefined);
    assert.equal(ring.find("c")?.roomSeq, (1n << 48n) | 3n);
  });

  it("truncates a cursor of another epoch, ahead of the writer, or before the window", () => {
    const r = new RoomRing(5, 3, 60_000);
    for (let i = 1; i <= 6; i++) r.append(rec(1000 + i)); // the cap keeps 4, 5, 6
    assert.equal(r.size, 3);
    assert.equal(r.earliest, 5n * E + 4n);
    const cut = { events: [], truncated: true, more: false };
    assert.deepEqual(r.replay(4n * E + 6n, 10, 2000), cut, "the writer's previous epoch");
    assert.deepEqual(r.replay(5n * E + 7n, 10, 2000), cut, "ahead of latest");
    assert.deepEqual(r.replay(5n * E + 2n, 10, 2000), cut, "3 was evicted: a gap");
    assert.deepEqual(r.replay(0n, 10, 2000), cut, "no cursor at all");
    // 3 is earliest - 1: the client has 1..3, the ring has 4..6: no gap
    assert.deepEqual(r.replay(5n * E + 3n, 10, 2000).events.map((e) => e.messageId), ["m1004", "m1005", "m1006"]);
  });

  it("evicts by age (room_log_retention_minutes) as well as by count, whichever comes first", () => {
    const r = new RoomRing(1, 100, 10_000);
    r.append(rec(0));
    r.append(rec(5_000));
    r.append(rec(9_000));
    // at 12,000 the first (age 12,000 > 10,000) is gone; the second (7,000) and third stay
    assert.deepEqual(r.replay(E + 1n, 10, 12_000).events.map((e) => e.messageId), ["m5000", "m9000"], "cursor 1 = earliest - 1: no gap");
    assert.equal(r.earliest, E + 2n);
    assert.equal(r.replay(E, 10, 12_000).truncated, true, "cursor 0: message 1 was evicted");
    // at 20,000 all three are older than 10 s: empty, earliest = latest + 1, latest still 3
    assert.equal(r.replay(E + 3n, 10, 20_000).truncated, false);
    assert.equal(r.size, 0);
    assert.equal(r.latest, E + 3n);
    assert.equal(r.earliest, E + 4n);
    assert.equal(r.replay(E + 2n, 10, 20_000).truncated, true);
    // appends go on after a full eviction, and compaction of the array keeps the arithmetic
    for (let i = 0; i < 300; i++) r.append(rec(30_000 + i));
    assert.equal(r.size, 100);
    assert.deepEqual(r.replay(E + 3n + 299n, 10, 30_400).events.map((e) => e.messageId), ["m30299"]);
  });
});

describe("mergeWindows (a node's frame interval)", () => {
  const tenant = "00000000-0000-4000-8000-0000000000aa" as Uuid;
  const room = "00000000-0000-4000-8000-0000000000bb" as Uuid;
  const ev = (epoch: number, c: number) => ({ ...rec(c), roomSeq: roomSeq(epoch, c), messageId: `e${epoch}.${c}` });
  const win = (epoch: number, cs: number[], extra: Partial<RoomWindow> = {}): RoomWindow => ({
    tenant, room, epoch, earliest: roomSeq(epoch, 1), latest: roomSeq(epoch, Math.max(0, ...cs)), truncated: false, more: false, events: cs.map((c) => ev(epoch, c)), online: 3, promotedTo: "", ...extra,
  });

  it("puts the interval's windows of one epoch in seq order, once each, above what was sent", () => {
    const m = mergeWindows([win(2, [3, 4]), win(2, [6]), win(2, [5])], roomSeq(2, 3));
    assert.deepEqual(m?.events.map((e) => e.messageId), ["e2.4", "e2.5", "e2.6"]);
    assert.equal(m?.latest, roomSeq(2, 6));
    assert.equal(m?.truncated, false);
    assert.equal(mergeWindows([win(2, [2, 3])], roomSeq(2, 3)), null, "everything was sent already");
    assert.equal(mergeWindows([]), null);
  });

  it("drops an older epoch's events when the writer moved, and says truncated", () => {
    const m = mergeWindows([win(2, [7, 8]), win(3, [1])]);
    assert.deepEqual(m?.events.map((e) => e.messageId), ["e3.1"]);
    assert.equal(m?.epoch, 3);
    assert.equal(m?.truncated, true);
  });

  it("keeps an empty window that names a promotion", () => {
    const m = mergeWindows([win(2, [], { promotedTo: room })], roomSeq(2, 9));
    assert.equal(m?.promotedTo, room);
    assert.deepEqual(m?.events, []);
  });
});
