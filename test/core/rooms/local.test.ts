/**
 * A node's outbound side of the rooms (core/rooms LocalRooms), in process with recording
 * connections: each connection gets at most one ROOM_BATCH per frame interval (1 / rate), however
 * many rooms it is in and however the interval's writes are sliced; every window's events reach
 * each of its connections once, in room_seq order; a turn of writes ends once it has taken
 * ROOM_FLUSH_TURN_MS; max_rooms_per_connection holds. The expected
 * values are worked out here from what the test fed in, not read back from the rooms.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { LocalRooms, ROOM_FLUSH_SHARE_PERCENT, ROOM_FLUSH_SLICE, ROOM_FLUSH_TURN_MS, roomSeq, type RoomConnection, type RoomPush, type RoomWindow, type Uuid } from "../../../core/index.js";

const tenant = "00000000-0000-4000-8000-0000000000aa" as Uuid;
const roomA = "00000000-0000-4000-8000-00000000000a" as Uuid;
const roomB = "00000000-0000-4000-8000-00000000000b" as Uuid;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

class Recorder implements RoomConnection {
  readonly tenant = tenant;
  readonly device = "d";
  readonly frames: { at: number; windows: RoomPush[] }[] = [];
  constructor(readonly user: Uuid) {}
  pushRooms(windows: readonly RoomPush[]): boolean {
    this.frames.push({ at: performance.now(), windows: [...windows] });
    return true;
  }
  events(room: Uuid): bigint[] {
    return this.frames.flatMap((f) => f.windows.filter((w) => w.room === room).flatMap((w) => w.events.map((e) => e.roomSeq)));
  }
}

const windowOf = (room: Uuid, epoch: number, counters: number[]): RoomWindow => ({
  tenant, room, epoch, earliest: roomSeq(epoch, 1), latest: roomSeq(epoch, Math.max(...counters)), truncated: false, more: false, online: 0, promotedTo: "",
  events: counters.map((c) => ({ roomSeq: roomSeq(epoch, c), messageId: `${room}.${c}`, sender: tenant, senderDevice: "s", createdAt: 0, contentType: "text/plain", payload: Buffer.from(String(c)) })),
});

describe("LocalRooms: the frame budget", { timeout: 60_000 }, () => {
  it("never two frames to one connection within 1 / rate, every event once and in order, across rooms and slices", async () => {
    const RATE = 20; // a 50 ms interval keeps the test short; the rule is the same at 10/s
    const INTERVAL = 1000 / RATE;
    const local = new LocalRooms({ frameRate: RATE });
    // more connections than a slice, so an interval's writes take several turns; the last ones are in both rooms
    const n = ROOM_FLUSH_SLICE * 2 + 50;
    const conns = Array.from({ length: n }, (_, i) => new Recorder(`00000000-0000-4000-8000-${String(i).padStart(12, "0")}` as Uuid));
    for (const c of conns) assert.equal(local.add(c, roomA), "added");
    for (const c of conns.slice(n - 60)) assert.equal(local.add(c, roomB), "added");
    for (const c of conns) local.setEpoch(c, roomA, 3);
    for (const c of conns.slice(n - 60)) local.setEpoch(c, roomB, 3);
    // 40 batches, one every 7 ms, alternating rooms, each with the next two counters of its room
    const next = { [roomA]: 1, [roomB]: 1 } as Record<Uuid, number>;
    for (let i = 0; i < 40; i++) {
      const room = i % 3 === 2 ? roomB : roomA;
      const c = next[room]!;
      next[room] = c + 2;
      local.receive([windowOf(room, 3, [c, c + 1])]);
      await sleep(7);
    }
    await sleep(INTERVAL * 6);
    local.stop();
    const expectA = Array.from({ length: next[roomA]! - 1 }, (_, i) => roomSeq(3, i + 1));
    const expectB = Array.from({ length: next[roomB]! - 1 }, (_, i) => roomSeq(3, i + 1));
    let frames = 0;
    for (const [i, c] of conns.entries()) {
      assert.deepEqual(c.events(roomA), expectA, `connection ${i}: room A's events once, in order`);
      assert.deepEqual(c.events(roomB), i >= n - 60 ? expectB : [], `connection ${i}: room B's`);
      for (let k = 1; k < c.frames.length; k++) {
        const gap = c.frames[k]!.at - c.frames[k - 1]!.at;
        assert.ok(gap >= INTERVAL, `connection ${i}: frames ${k - 1} and ${k} ${gap.toFixed(1)} ms apart, under ${INTERVAL} ms`);
      }
      // one frame carries a window per room it had messages in
      for (const f of c.frames) assert.equal(new Set(f.windows.map((w) => w.room)).size, f.windows.length);
      frames += c.frames.length;
    }
    // merged: 40 batches over about 280 ms reach each connection in far fewer frames than batches
    assert.ok(frames < n * 40 / 2, `${frames} frames for ${n} connections`);
  });

  it("a turn of writes ends once it took ROOM_FLUSH_TURN_MS: writes that cost more than that each get a turn of their own, the node resting between them for the rest of its share; all arrive", async () => {
    // the event loop's turns, counted by a callback that queues itself for every next one: the
    // rooms' next slice and this counter run in the same phase, so two writes with the same count
    // went out in the same turn
    let turn = 0;
    let counting = true;
    const count = () => { turn++; if (counting) setImmediate(count); };
    setImmediate(count);
    class Slow extends Recorder {
      readonly turns: number[] = [];
      readonly spans: [number, number][] = [];
      override pushRooms(windows: readonly RoomPush[]): boolean {
        // a write that costs a little more than a turn's whole budget (a TLS frame on a loaded machine)
        const began = performance.now();
        const until = began + ROOM_FLUSH_TURN_MS * 1.2;
        while (performance.now() < until);
        this.turns.push(turn);
        this.spans.push([began, performance.now()]);
        return super.pushRooms(windows);
      }
    }
    const local = new LocalRooms({ frameRate: 20 });
    const conns = Array.from({ length: 12 }, (_, i) => new Slow(`00000000-0000-4000-8000-${String(i).padStart(12, "0")}` as Uuid));
    for (const c of conns) { local.add(c, roomA); local.setEpoch(c, roomA, 3); }
    local.receive([windowOf(roomA, 3, [1, 2])]);
    await sleep(200);
    local.stop();
    counting = false;
    const turns = conns.map((c) => c.turns);
    for (const [i, c] of conns.entries()) assert.deepEqual(c.events(roomA), [roomSeq(3, 1), roomSeq(3, 2)], `connection ${i}: both events, once`);
    assert.equal(new Set(turns.flat()).size, conns.length, `one write a turn, got the turns ${JSON.stringify(turns)}`);
    // between two turns the node rested at least (100 − share) / share times the last one (a timer's
    // delay is a lower bound; 1 ms for its rounding)
    const spans = conns.flatMap((c) => c.spans).sort((x, y) => x[0] - y[0]);
    const ratio = (100 - ROOM_FLUSH_SHARE_PERCENT) / ROOM_FLUSH_SHARE_PERCENT;
    for (let k = 1; k < spans.length; k++) {
      const [b0, e0] = spans[k - 1]!;
      const rest = spans[k]![0] - e0;
      assert.ok(rest >= (e0 - b0) * ratio - 1, `write ${k}: rested ${rest.toFixed(2)} ms after a turn of ${(e0 - b0).toFixed(2)} ms`);
    }
  });

  it("a window of a new epoch reaches a connection of the old one as replay_truncated; one at epoch 0 (its JOIN unanswered yet) as it is", async () => {
    const local = new LocalRooms({ frameRate: 50 });
    const [old, fresh] = [new Recorder(tenant), new Recorder(roomB)];
    local.add(old, roomA);
    local.add(fresh, roomA);
    local.setEpoch(old, roomA, 3);
    local.receive([windowOf(roomA, 4, [1])]);
    await sleep(60);
    local.stop();
    assert.deepEqual(old.frames.map((f) => f.windows.map((w) => [w.epoch, w.truncated])), [[[4, true]]]);
    assert.deepEqual(fresh.frames.map((f) => f.windows.map((w) => [w.epoch, w.truncated])), [[[4, false]]]);
  });

  it("max_rooms_per_connection: the 21st room is refused and nothing changes; a leave frees a place", () => {
    const local = new LocalRooms();
    const c = new Recorder(tenant);
    const rooms = Array.from({ length: 21 }, (_, i) => `00000000-0000-4000-8000-${String(i + 100).padStart(12, "0")}` as Uuid);
    for (const r of rooms.slice(0, 20)) assert.equal(local.add(c, r), "added");
    assert.equal(local.add(c, rooms[20]!), "full");
    assert.equal(local.has(c, rooms[20]!), false);
    assert.equal(local.add(c, rooms[0]!), "already");
    assert.equal(local.remove(c, rooms[0]!), true);
    assert.equal(local.add(c, rooms[20]!), "added");
    assert.deepEqual(local.removeAll(c).sort(), rooms.slice(1).sort());
    assert.equal(local.size, 0);
    local.stop();
  });
});
