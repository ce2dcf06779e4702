/**
 * RoomWriters (core/rooms) in one process, its unit's epoch and promotion given directly (what the
 * cluster and Redis answer it): a retried message and a room forgotten and opened again. Expected
 * room_seqs are worked out by hand: (epoch << 48) | counter.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { RoomWriters, type PublishRequest, type Uuid } from "../../../core/index.js";

const T = "00000000-0000-4000-8000-000000000001" as Uuid;
const R = "10000000-0000-4000-8000-000000000001" as Uuid;
const U = "a0000000-0000-4000-8000-000000000001" as Uuid;
const seq = (epoch: number, counter: number) => (BigInt(epoch) << 48n) | BigInt(counter);

function writers(epoch: { now: number }, clock: { now: number }) {
  return new RoomWriters({
    nodeId: "n1", now: () => clock.now, epochOf: async () => epoch.now, broadcast: () => undefined, promotedGroup: async () => null,
    retentionMs: 60_000, rate: 1000, burst: 1000,
  });
}
const msg = (id: string, text = id): PublishRequest => ({ tenant: T, room: R, sender: U, senderDevice: "d1", messageId: id, contentType: "text/plain", payload: Buffer.from(text) });

describe("RoomWriters", () => {
  it("answers a retry of a message in the window with its first room_seq, and refuses other content under its id", async () => {
    const w = writers({ now: 3 }, { now: 1_000 });
    assert.equal((await w.publish(msg("m1"), 0, "n1", 1)).roomSeq, seq(3, 1));
    assert.equal((await w.publish(msg("m2"), 0, "n1", 1)).roomSeq, seq(3, 2));
    assert.equal((await w.publish(msg("m1"), 0, "n1", 1)).roomSeq, seq(3, 1));
    await assert.rejects(w.publish(msg("m1", "other"), 0, "n1", 1), { code: "IDEMPOTENCY_CONFLICT" });
    assert.equal((await w.publish(msg("m3"), 0, "n1", 1)).roomSeq, seq(3, 3), "the retry took no counter");
  });

  it("a room forgotten (nobody in it, its ring aged out) and opened again in the same epoch goes on from its counter; in a new epoch from 1", async () => {
    const epoch = { now: 5 };
    const clock = { now: 1_000 };
    const w = writers(epoch, clock);
    for (const id of ["a", "b", "c"]) await w.publish(msg(id), 0, "n1", 0);
    // broadcast (the turn's flush), then past the retention: the sweep forgets the room
    await new Promise((r) => setImmediate(r));
    clock.now += 120_000;
    w.sweep();
    assert.equal(w.size, 0);
    // a replay of the room not open says where it stopped, and opens nothing
    const r = await w.replay(T, R, 0, seq(5, 3));
    assert.deepEqual([r.latest, r.truncated, w.size], [seq(5, 3), false, 0]);
    assert.equal((await w.publish(msg("d"), 0, "n1", 0)).roomSeq, seq(5, 4));
    // the unit moved and came back: a new epoch, a new count
    await new Promise((r) => setImmediate(r));
    clock.now += 120_000;
    w.sweep();
    epoch.now = 6;
    assert.equal((await w.publish(msg("e"), 0, "n1", 0)).roomSeq, seq(6, 1));
  });
});
