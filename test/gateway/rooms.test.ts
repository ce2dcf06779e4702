/**
 * Chat rooms (issue 28, spec 003 §1, core/rooms) on two REAL node processes sharing one Redis,
 * devices on both, driven frame by frame (test/gateway/device.ts). Both nodes take every kind of
 * unit, so the room units are split between them and a room's writer is one of the two. Acceptance
 * C-2 (the writer SIGKILLed and restarted) and C-3 (200 msg/s into one room) with the spec's
 * numbers. Expected values come from what the test did — the ROOM_SEND_ACKs it got (their
 * room_seqs), the lease tokens Redis holds, the room_seq arithmetic (epoch << 48 | counter) written
 * out here — never from a read of the node's rooms.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import type { Redis } from "ioredis";
import { sleep, until } from "../cluster/processes.js";
import { failed, ok, run } from "../e2e/qimctl.js";
import { Device, show, type Body } from "./device.js";
import { startTwoNodes, type NodeSlot, type TwoNodes } from "./two-nodes.js";
import type { AdminClient } from "../../admin-api/client.js";
import { KeySpace, roomUnitOf, unitLeaseKey, type Uuid } from "../../core/index.js";

/** The spec's numbers (spec 003 §1.5), written out: the test's own. */
const ROOM_MSG_RATE = 20;
const ROOM_OUTBOUND_FRAME_RATE = 10;
const MAX_ROOMS_PER_CONNECTION = 20;
const EPOCH_SHIFT = 48n;

type Window = Extract<Body, { $case: "roomBatch" }>["roomBatch"]["windows"][number];
type Event = Window["events"][number];

const epochOf = (seq: bigint) => Number(seq >> EPOCH_SHIFT);
const counterOf = (seq: bigint) => Number(seq & ((1n << EPOCH_SHIFT) - 1n));

/** The pushed windows of `room` a device got, in arrival order (answers to its requests are not pushes). */
const pushedWindows = (d: Device, room: string): Window[] =>
  d.received.filter((r) => r.frame.requestId === 0n && r.frame.body?.$case === "roomBatch")
    .flatMap((r) => (r.frame.body as Extract<Body, { $case: "roomBatch" }>).roomBatch.windows).filter((w) => w.room === room);
const pushedEvents = (d: Device, room: string): Event[] => pushedWindows(d, room).flatMap((w) => w.events);
/** Arrival times of the ROOM_BATCH pushes a device got. */
const batchTimes = (d: Device): number[] => d.received.filter((r) => r.frame.requestId === 0n && r.frame.body?.$case === "roomBatch").map((r) => r.at);
const errorsPushedOrAnswered = (d: Device) => d.received.filter((r) => r.frame.body?.$case === "error");

function strictlyIncreasing(seqs: bigint[]): boolean {
  return seqs.every((s, i) => i === 0 || s > seqs[i - 1]!);
}

/** The most frames in any 1,000 ms of arrival times. */
function maxPerSecond(times: number[]): number {
  let best = 0;
  for (let i = 0, j = 0; i < times.length; i++) {
    while (times[i]! - times[j]! >= 1000) j++;
    best = Math.max(best, i - j + 1);
  }
  return best;
}

describe("chat rooms across two nodes", { timeout: 300_000 }, () => {
  let env: TwoNodes;
  let raw: Redis;
  let nodes: NodeSlot[];
  let context: string;
  let tenant: string;
  let ca: Buffer;
  let admin: AdminClient;
  const open: Device[] = [];
  const startNode = (n: NodeSlot) => env.startNode(n);

  const device = async (on: 0 | 1, user = randomUUID()): Promise<Device> => {
    const name = `dev-${randomUUID().slice(0, 8)}`;
    const { token } = ok(await run(["token", "issue", "--user", user, "--device", name, "--ttl", "1h"], { context }), "token issue") as { token: string };
    const d = await Device.open(nodes[on]!.url!, ca, token);
    assert.ok(d instanceof Device, `connected: ${show(d)}`);
    const a = await d.request({ $case: "auth", auth: { deviceId: name, clientVersion: "test" } });
    assert.equal(a.body?.$case, "authOk", show(a.body));
    open.push(d);
    return d;
  };
  const join = async (d: Device, room: string, after = 0n): Promise<Window> => {
    const f = await d.request({ $case: "roomJoin", roomJoin: { room, afterRoomSeq: after } });
    assert.equal(f.body?.$case, "roomBatch", show(f.body));
    const ws = (f.body as Extract<Body, { $case: "roomBatch" }>).roomBatch.windows;
    assert.equal(ws.length, 1);
    return ws[0]!;
  };
  const say = async (d: Device, room: string, text: string): Promise<Body> =>
    (await d.request({ $case: "roomSend", roomSend: { room, clientMsgNo: text.replace(/\s/g, "_"), contentType: "text/plain", payload: Buffer.from(text) } })).body!;
  const ackSeq = (b: Body): bigint => {
    assert.equal(b.$case, "roomSendAck", show(b));
    return (b as Extract<Body, { $case: "roomSendAck" }>).roomSendAck.roomSeq;
  };
  /** The room's writer as its unit's lease in Redis names it, with the lease's token. */
  const writerOf = async (room: string): Promise<{ owner: string; token: number }> => {
    const key = unitLeaseKey(new KeySpace("qim"), "room", roomUnitOf(tenant as Uuid, room as Uuid));
    const [owner, token] = await raw.hmget(key, "owner", "token");
    return { owner: owner ?? "", token: Number(token ?? 0) };
  };

  before(async () => {
    env = await startTwoNodes("qim-rooms-", [
      // senders of C-3 send 50/s each: the per-user limit has its own test (flood.test.ts)
      "--gateway-user-msg-rate", "1000000",
    ]);
    ({ raw, nodes, context, tenant, ca, admin } = env);
    await until("both nodes alive, the room units split between them", async () => {
      const r = await admin.listNodes({});
      return r.nodes.length === 2 && r.nodes.every((n) => n.alive && (n.owned?.rooms ?? 0) > 0) && r.nodes.reduce((s, n) => s + (n.owned?.rooms ?? 0), 0) === 256;
    });
  });

  after(async () => {
    for (const d of open) d.ws.terminate();
    await env?.stop();
  });

  it("a message reaches every connection in the room on both nodes once and in order; JOIN and REPLAY answer with the window; LEAVE stops it", async () => {
    const room = randomUUID();
    const [d1, d2, d3, d4] = [await device(0), await device(1), await device(0), await device(1)];
    const w1 = await join(d1, room);
    const epoch = w1.roomEpoch;
    assert.ok(epoch >= 1);
    // a room nobody wrote to: counter 0, the window empty (earliest = latest + 1), nothing replayed
    assert.equal(w1.latestRoomSeq, BigInt(epoch) << EPOCH_SHIFT);
    assert.equal(w1.earliestReplayRoomSeq, w1.latestRoomSeq + 1n);
    assert.deepEqual([w1.replayTruncated, w1.events.length, w1.promotedToGroup], [false, 0, ""]);
    await join(d2, room);
    await join(d3, room);
    const seqs: bigint[] = [];
    for (let i = 1; i <= 5; i++) seqs.push(ackSeq(await say(d1, room, `hello ${i}`)));
    // the acks: counters 1..5 of the join's epoch
    assert.deepEqual(seqs, [1, 2, 3, 4, 5].map((c) => (BigInt(epoch) << EPOCH_SHIFT) | BigInt(c)));
    for (const d of [d1, d2, d3]) {
      await until("every joined connection has the five messages", async () => pushedEvents(d, room).length >= 5);
      const got = pushedEvents(d, room);
      assert.deepEqual(got.map((e) => e.roomSeq), seqs, "each once, in order");
      assert.deepEqual(got.map((e) => Buffer.from(e.payload).toString()), [1, 2, 3, 4, 5].map((i) => `hello ${i}`));
      assert.ok(got.every((e) => e.messageId !== "" && e.senderDevice !== ""));
    }
    assert.equal(pushedWindows(d4, room).length, 0, "a connection not in the room gets nothing");
    // a retry (the same client_msg_no, the same message) answers the first room_seq and sends nothing again; other content under it is refused
    assert.equal(ackSeq(await say(d1, room, "hello 3")), seqs[2]);
    const conflict = (await d1.request({ $case: "roomSend", roomSend: { room, clientMsgNo: "hello_3", contentType: "text/plain", payload: Buffer.from("something else") } })).body!;
    assert.equal(conflict.$case === "error" ? conflict.error.code : show(conflict), "IDEMPOTENCY_CONFLICT");
    // REPLAY after the second: 3, 4, 5; a cursor of no epoch: truncated with nothing — an answer, not an ERROR
    const r = (await d2.request({ $case: "roomReplay", roomReplay: { room, afterRoomSeq: seqs[1]!, limit: 0 } })).body;
    assert.equal(r?.$case, "roomBatch", show(r));
    const rw = (r as Extract<Body, { $case: "roomBatch" }>).roomBatch.windows[0]!;
    assert.deepEqual(rw.events.map((e) => e.roomSeq), seqs.slice(2));
    assert.deepEqual([rw.replayTruncated, rw.more, rw.latestRoomSeq, rw.earliestReplayRoomSeq], [false, false, seqs[4], seqs[0]]);
    const page = (await d2.request({ $case: "roomReplay", roomReplay: { room, afterRoomSeq: seqs[0]!, limit: 2 } })).body as Extract<Body, { $case: "roomBatch" }>;
    assert.deepEqual(page.roomBatch.windows[0]!.events.map((e) => e.roomSeq), seqs.slice(1, 3));
    assert.equal(page.roomBatch.windows[0]!.more, true);
    const cut = (await d2.request({ $case: "roomReplay", roomReplay: { room, afterRoomSeq: 12345n, limit: 0 } })).body as Extract<Body, { $case: "roomBatch" }>;
    assert.deepEqual([cut.roomBatch.windows[0]!.replayTruncated, cut.roomBatch.windows[0]!.events.length], [true, 0]);
    // JOIN with a cursor replays after it
    const w4 = await join(d4, room, seqs[0]!);
    assert.deepEqual(w4.events.map((e) => e.roomSeq), seqs.slice(1));
    // the writer counts the four connections (the nodes' counts reach it within a refresh)
    await until("the writer counts four connections online", async () => {
      const f = (await d1.request({ $case: "roomReplay", roomReplay: { room, afterRoomSeq: seqs[4]!, limit: 0 } })).body as Extract<Body, { $case: "roomBatch" }>;
      return f.roomBatch.windows[0]!.online === 4;
    });
    // LEAVE: d3 gets no more; a second LEAVE says it was not in
    const leave = (await d3.request({ $case: "roomLeave", roomLeave: { room } })).body;
    assert.deepEqual(leave, { $case: "roomLeaveAck", roomLeaveAck: { left: true } });
    const sixth = ackSeq(await say(d2, room, "after the leave"));
    await until("d1 has the sixth", async () => pushedEvents(d1, room).some((e) => e.roomSeq === sixth));
    assert.equal(sixth, seqs[4]! + 1n, "the retry took no counter");
    assert.deepEqual(pushedEvents(d1, room).map((e) => e.roomSeq), [...seqs, sixth], "the retry was not sent again");
    await sleep(300);
    assert.equal(pushedEvents(d3, room).length, 5, "nothing after its leave (and the retry was not sent again)");
    assert.deepEqual((await d3.request({ $case: "roomLeave", roomLeave: { room } })).body, { $case: "roomLeaveAck", roomLeaveAck: { left: false } });
    // nothing of it is a message of the engine: the device's conversation list is empty
    const list = (await d1.request({ $case: "pullSessionList", pullSessionList: { cursor: "", limit: 10 } })).body as Extract<Body, { $case: "sessionList" }>;
    assert.equal(list.sessionList.entries.length, 0, "no mailbox entry, no list row");
  });

  it("operators: qimctl room list|show|replay (the online count per room) and promote — the group gets the room's id, its online users at joined_at 0, seq from 1, no room message in its history", async () => {
    const room = randomUUID();
    const [ua, ub, owner] = [randomUUID(), randomUUID(), randomUUID()];
    const a = await device(0, ua);
    const b = await device(1, ub);
    const b2 = await device(0, ub); // the same user on the other node: one member
    for (const d of [a, b, b2]) await join(d, room);
    const seqs = [ackSeq(await say(a, room, "one")), ackSeq(await say(b, room, "two"))];
    const shown = await until("room show counts three connections on two nodes", async () => {
      const r = ok(await run(["room", "show", "--room", room], { context }), "room show") as { online: number; nodes: { nodeId: string; connections: number }[]; latestRoomSeq: string; epoch: number; messagesThisEpoch: number; writer: string };
      return r.online === 3 ? r : undefined;
    });
    assert.deepEqual(shown.nodes, [{ nodeId: "node-a", connections: 2 }, { nodeId: "node-b", connections: 1 }]);
    assert.equal(shown.latestRoomSeq, seqs[1]!.toString());
    assert.equal(shown.messagesThisEpoch, 2);
    assert.equal(shown.epoch, epochOf(seqs[0]!));
    assert.equal((await writerOf(room)).owner, shown.writer);
    // a replay of a room nobody opened answers truncated and opens nothing (a read changes what no one else sees)
    const nobody = randomUUID();
    const probe = (await a.request({ $case: "roomReplay", roomReplay: { room: nobody, afterRoomSeq: 7n, limit: 0 } })).body as Extract<Body, { $case: "roomBatch" }>;
    assert.deepEqual([probe.roomBatch.windows[0]!.replayTruncated, probe.roomBatch.windows[0]!.events.length], [true, 0]);
    const listed = ok(await run(["room", "list", "--limit", "500"], { context }), "room list") as { rooms: { room: string; online: number }[] };
    assert.deepEqual(listed.rooms.filter((r) => r.room === room).map((r) => r.online), [3]);
    assert.equal(listed.rooms.some((r) => r.room === nobody), false, "the probed room is not open");
    failed(await run(["room", "show", "--room", nobody], { context }), 3, "the probed room is not open");
    const replay = ok(await run(["room", "replay", "--room", room], { context }), "room replay") as { messages: { roomSeq: string; text: string }[]; replayTruncated: boolean };
    assert.deepEqual(replay.messages.map((m) => [m.roomSeq, m.text]), [[seqs[0]!.toString(), "one"], [seqs[1]!.toString(), "two"]]);
    const epochColon = `${epochOf(seqs[0]!)}:${counterOf(seqs[0]!)}`;
    const after1 = ok(await run(["room", "replay", "--room", room, "--after", epochColon], { context }), "room replay --after E:C") as { messages: { text: string }[] };
    assert.deepEqual(after1.messages.map((m) => m.text), ["two"]);
    failed(await run(["room", "show", "--room", randomUUID()], { context }), 3, "a room not open");
    failed(await run(["room", "replay", "--room", room, "--after", "1:x"], { context }), 2, "a bad cursor");

    const p = ok(await run(["room", "promote", "--room", room, "--owner", owner, "--yes"], { context }), "room promote") as { group: string; members: string[]; lastRoomSeq: string };
    assert.equal(p.group, room);
    assert.deepEqual([...p.members].sort(), [owner, ua, ub].sort(), "the owner and each online user once");
    assert.equal(p.lastRoomSeq, seqs[1]!.toString());
    for (const d of [a, b, b2]) {
      await until("each connection is told", async () => pushedWindows(d, room).some((w) => w.promotedToGroup === room));
    }
    const refused = await say(a, room, "three");
    assert.equal(refused.$case === "error" && refused.error.code, "FAILED_PRECONDITION", show(refused));
    failed(await run(["room", "promote", "--room", room, "--owner", owner], { context }), 2, "no --yes without a terminal");
    failed(await run(["room", "promote", "--room", room, "--owner", owner, "--yes"], { context }), 4, "promoted already");
    // an ordinary group now: its first message is seq 1, and its history has none of the room's
    const sent = (await a.request({ $case: "send", send: { clientMsgNo: "g1", group: room, payload: Buffer.from("in the group"), contentType: "text/plain", mentions: [] } })).body;
    assert.equal(sent?.$case === "sendAck" && sent.sendAck.conversationSeq, 1n, show(sent));
    const hist = (await b.request({ $case: "pullHistory", pullHistory: { group: room, afterSeq: 0n, limit: 50 } })).body as Extract<Body, { $case: "historyBatch" }>;
    assert.deepEqual(hist.historyBatch.messages.map((m) => Buffer.from(m.payload).toString()), ["in the group"], "joined_at 0: the member reads from seq 1; no room message");

    // a room whose id another owner's group has already: refused, the room goes on as a room
    const taken = randomUUID();
    const other = randomUUID();
    await admin.createGroup({ tenant, group: taken, owner: other, members: [] });
    const c = await device(0);
    await join(c, taken);
    failed(await run(["room", "promote", "--room", taken, "--owner", owner, "--yes"], { context }), 4, "another owner's group has the room's id");
    const still = ok(await run(["room", "show", "--room", taken], { context }), "room show") as { promotedToGroup: string | null; online: number };
    assert.deepEqual([still.promotedToGroup, still.online], [null, 1], "not marked promoted; c is in it");
    ackSeq(await say(c, taken, "still a room"));
  });

  it("refuses what it must with a code and changes nothing: a send to a room not joined, a bad room id, an oversized payload, a 21st room", async () => {
    const d = await device(0);
    const room = randomUUID();
    const notJoined = await say(d, room, "x");
    assert.equal(notJoined.$case === "error" && notJoined.error.code, "FAILED_PRECONDITION", show(notJoined));
    const bad = (await d.request({ $case: "roomJoin", roomJoin: { room: "lobby", afterRoomSeq: 0n } })).body;
    assert.equal(bad?.$case === "error" && bad.error.code, "INVALID_ARGUMENT", show(bad));
    await join(d, room);
    const big = (await d.request({ $case: "roomSend", roomSend: { room, clientMsgNo: "big", contentType: "text/plain", payload: Buffer.alloc(8 * 1024 + 1) } })).body;
    assert.equal(big?.$case === "error" && big.error.code, "INVALID_ARGUMENT", show(big));
    const rooms = [room];
    for (let i = 1; i < MAX_ROOMS_PER_CONNECTION; i++) {
      rooms.push(randomUUID());
      await join(d, rooms[i]!);
    }
    const extra = (await d.request({ $case: "roomJoin", roomJoin: { room: randomUUID(), afterRoomSeq: 0n } })).body;
    assert.equal(extra?.$case === "error" && extra.error.code, "FAILED_PRECONDITION", show(extra));
    // a join again of a room it is in is no new room; after one leave a new room is taken
    await join(d, rooms[3]!);
    await d.request({ $case: "roomLeave", roomLeave: { room: rooms[3]! } });
    await join(d, randomUUID());
    // the refused send wrote nothing: the room's first message is counter 1
    const first = ackSeq(await say(d, room, "first"));
    assert.equal(counterOf(first), 1);
    assert.equal(d.closed, null);
  });

  it("C-3: 200 msg/s into one room — the writer refuses past room_msg_rate, each connection gets at most room_outbound_frame_rate frames a second with the rest merged", async (t) => {
    const room = randomUUID();
    const receivers = [await device(0), await device(1)];
    const senders = [await device(0), await device(0), await device(1), await device(1)];
    for (const d of [...receivers, ...senders]) await join(d, room);
    await sleep(1200); // every node's count reached the writer
    const PER_SENDER_MS = 20; // 50/s each, 200/s together
    const DURATION_MS = 3000;
    const answers: Promise<Body>[] = [];
    const t0 = performance.now();
    await Promise.all(senders.map(async (s, k) => {
      for (let i = 0; performance.now() - t0 < DURATION_MS; i++) {
        answers.push(say(s, room, `s${k}-${i}`));
        await sleep(PER_SENDER_MS);
      }
    }));
    const bodies = await Promise.all(answers);
    const elapsedS = (performance.now() - t0) / 1000;
    const acked = bodies.filter((b) => b.$case === "roomSendAck").map((b) => (b as Extract<Body, { $case: "roomSendAck" }>).roomSendAck.roomSeq).sort((a, b) => (a < b ? -1 : 1));
    const limited = bodies.filter((b) => b.$case === "error" && b.error.code === "RATE_LIMITED");
    assert.equal(acked.length + limited.length, bodies.length, `every ROOM_SEND is acked or RATE_LIMITED: ${show(bodies.find((b) => b.$case !== "roomSendAck" && !(b.$case === "error" && b.error.code === "RATE_LIMITED")))}`);
    assert.ok(bodies.length >= 400, `the senders offered ${bodies.length} in ${elapsedS.toFixed(1)} s`);
    // the writer's bucket: a burst of one second's worth, then room_msg_rate
    assert.ok(acked.length <= ROOM_MSG_RATE * (elapsedS + 1), `${acked.length} taken in ${elapsedS.toFixed(2)} s: at most ${ROOM_MSG_RATE}/s`);
    assert.ok(limited.length > 0 && limited.every((b) => b.$case === "error" && b.error.retryAfterMs > 0));
    // counters 1..n with no gap: every taken message had the next seq
    assert.deepEqual(acked.map(counterOf), acked.map((_, i) => counterOf(acked[0]!) + i));
    for (const r of receivers) {
      await until("the receiver has every taken message", async () => pushedEvents(r, room).length >= acked.length);
      assert.deepEqual(pushedEvents(r, room).map((e) => e.roomSeq), acked, "each taken message once, in order");
      const times = batchTimes(r);
      // the node writes a frame interval apart (≥ 100 ms); arrival can bunch two frames by a few ms
      assert.ok(maxPerSecond(times) <= ROOM_OUTBOUND_FRAME_RATE + 1, `at most ${ROOM_OUTBOUND_FRAME_RATE} frames a second, saw ${maxPerSecond(times)} in one second`);
      const spanS = (times[times.length - 1]! - times[0]!) / 1000;
      assert.ok(times.length <= ROOM_OUTBOUND_FRAME_RATE * spanS + 2, `${times.length} frames over ${spanS.toFixed(2)} s`);
      assert.ok(times.length < acked.length, `merged: ${acked.length} messages in ${times.length} frames`);
      assert.equal(errorsPushedOrAnswered(r).length, 0);
      t.diagnostic(`offered ${bodies.length} in ${elapsedS.toFixed(2)} s, taken ${acked.length}, refused ${limited.length}; a receiver got them in ${times.length} frames, at most ${maxPerSecond(times)} in one second`);
    }
  });

  it("C-2: the writer SIGKILLed, then restarted — the epoch grows each time, connections get replay_truncated and jump to latest, no ERROR frame, no order inversion", async () => {
    // a room whose writer is node B, with the devices watched on node A (the survivor)
    let room = randomUUID();
    for (let i = 0; i < 100 && (await writerOf(room)).owner !== "node-b"; i++) room = randomUUID();
    const before = await writerOf(room);
    assert.equal(before.owner, "node-b");
    const watcher = await device(0);
    const sender = await device(0);
    const onVictim = await device(1);
    await join(watcher, room);
    await join(sender, room);
    const w0 = await join(onVictim, room);
    assert.equal(w0.roomEpoch, before.token % 65535 || 65535, "the epoch is the lease's token");
    const first: bigint[] = [];
    for (let i = 1; i <= 3; i++) first.push(ackSeq(await say(sender, room, `before ${i}`)));
    await until("the watcher has the first three", async () => pushedEvents(watcher, room).length >= 3);

    nodes[1]!.proc!.signal("SIGKILL");
    await nodes[1]!.proc!.exited;
    /** Sends until the writer takes one (UNAVAILABLE while the dead node's lease runs out): its ack's seq. */
    const sendThrough = async (tag: string): Promise<bigint> => {
      for (let i = 0; i < 200; i++) {
        const b = await say(sender, room, `${tag} ${i}`);
        if (b.$case === "roomSendAck") return b.roomSendAck.roomSeq;
        assert.ok(b.$case === "error" && ["UNAVAILABLE", "STALE_OWNER"].includes(b.error.code), show(b));
        await sleep(250);
      }
      throw new Error("no writer took the room");
    };
    const moved = await sendThrough("after the kill");
    const taken = await writerOf(room);
    assert.equal(taken.owner, "node-a", "the survivor writes the room now");
    assert.ok(taken.token > before.token);
    assert.equal(epochOf(moved), taken.token % 65535 || 65535, "the new epoch is the new token");
    assert.ok(epochOf(moved) > epochOf(first[2]!), "the epoch grew");
    assert.equal(counterOf(moved), 1, "a new writer's ring starts empty (never handed over)");
    await until("the watcher got the new epoch", async () => pushedWindows(watcher, room).some((w) => w.roomEpoch === epochOf(moved)));
    const jump = pushedWindows(watcher, room).find((w) => w.roomEpoch === epochOf(moved))!;
    assert.equal(jump.replayTruncated, true, "what the watcher had does not continue: jump to latest");
    assert.ok(jump.latestRoomSeq >= moved);
    assert.equal(errorsPushedOrAnswered(watcher).length, 0, "no ERROR frame");
    // the old cursor replays nothing and says so: an answer, not an ERROR
    const old = (await watcher.request({ $case: "roomReplay", roomReplay: { room, afterRoomSeq: first[2]!, limit: 0 } })).body as Extract<Body, { $case: "roomBatch" }>;
    assert.equal(old.$case, "roomBatch");
    assert.deepEqual([old.roomBatch.windows[0]!.replayTruncated, old.roomBatch.windows[0]!.events.length, old.roomBatch.windows[0]!.roomEpoch], [true, 0, epochOf(moved)]);

    // node B back: the unit's assignment goes home to it (same nodes, same assignment), the token and the epoch grow again
    await startNode(nodes[1]!);
    await until("node B writes the room again", async () => (await writerOf(room)).owner === "node-b" || undefined);
    let back = await sendThrough("after the restart");
    for (let i = 0; i < 40 && epochOf(back) === epochOf(moved); i++) {
      await sleep(250);
      back = await sendThrough("after the restart");
    }
    const home = await writerOf(room);
    assert.equal(epochOf(back), home.token % 65535 || 65535);
    assert.ok(epochOf(back) > epochOf(moved), "the epoch grew again");
    await until("the watcher got the third epoch", async () => pushedWindows(watcher, room).some((w) => w.roomEpoch === epochOf(back)));
    assert.equal(pushedWindows(watcher, room).find((w) => w.roomEpoch === epochOf(back))!.replayTruncated, true);
    // the whole history the watcher saw: strictly increasing room_seqs (no inversion), epochs never going back
    const seen = pushedEvents(watcher, room).map((e) => e.roomSeq);
    assert.ok(strictlyIncreasing(seen), `order: ${seen.map(String).join(", ")}`);
    assert.deepEqual(seen.slice(0, 3), first);
    assert.equal(errorsPushedOrAnswered(watcher).length, 0, "no ERROR frame");
  });
});
