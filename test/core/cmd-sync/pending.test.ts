/**
 * CmdPendingUpdater (spec 001 ConversationUpdater) against the real RedisCmdStateStore on a
 * redis-server: coalescing by monotonic max with per-user last seq and active time (the notes'
 * cases), the bounded queue, markSynced, the flush's order, batches of one slot, all-or-nothing
 * failures (a slot whose lease another owner took), entries that moved during a flush, lost
 * slots, and FNV-32a sharding.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  CMD_SETTLED_MEMORY_MS, CmdFencedError, CmdPendingUpdater, fnv32a, InvalidArgumentError, newUuid, pendingShardOf, registry, slotOfUser,
  type CmdConversationState, type CmdStateStore, type ConversationIntent, type Fence, type Uuid,
} from "../../../core/index.js";
import { SOLO, takeLease, useCmdRedis, userOutside, usersInSlot } from "./fixture.js";

const fx = useCmdRedis("single");
const ch = (channelId: string, channelType = 2) => ({ channelId, channelType });

function intent(tenant: Uuid, channelId: string, messageSeq: number, activeAt: number, users: [Uuid, number][], channelType = 2): ConversationIntent {
  return { tenant, channel: ch(channelId, channelType), messageSeq, activeAt, userReadSeqs: new Map(users) };
}

function updater(over: Partial<ConstructorParameters<typeof CmdPendingUpdater>[0]> = {}) {
  const { space, states } = fx.fresh();
  let clock = 0;
  const pending = new CmdPendingUpdater({
    store: states, dataDir: null, slotOf: slotOfUser, fenceOf: () => SOLO, flushIntervalMs: 0, now: () => ++clock, log: () => {}, ...over,
  });
  return { pending, space, realStates: states };
}

async function counter(name: string, labels: Record<string, string> = {}): Promise<number> {
  const m = registry.getSingleMetric(name);
  if (!m) return 0;
  const v = (await m.get()).values.find((x) => Object.entries(labels).every(([k, l]) => x.labels[k] === l));
  return v?.value ?? 0;
}

describe("CmdPendingUpdater", () => {
  it("coalesces: (5, 50, {u1:0, u2:5}) then (7, 70, {u1:0, u2:0, u3:0}) → u2 last 7, active 70, read 5", () => {
    const { pending } = updater();
    const t = newUuid();
    const [u1, u2, u3] = [newUuid(), newUuid(), newUuid()];
    assert.equal(pending.pushIntent(intent(t, "g1____cmd", 5, 50, [[u1, 0], [u2, 5]])), true);
    assert.equal(pending.pushIntent(intent(t, "g1____cmd", 7, 70, [[u1, 0], [u2, 0], [u3, 0]])), true);
    assert.deepEqual(pending.listPending(t, u2, 10), [{ channel: ch("g1____cmd"), lastMsgSeq: 7, activeAt: 70, readSeq: 5 }]);
    assert.deepEqual(pending.listPending(t, u1, 10), [{ channel: ch("g1____cmd"), lastMsgSeq: 7, activeAt: 70, readSeq: 0 }]);
    assert.equal(pending.size(), 3);
    // an older intent after a newer one changes nothing; a replay changes nothing
    pending.pushIntent(intent(t, "g1____cmd", 5, 50, [[u2, 0]]));
    pending.pushIntent(intent(t, "g1____cmd", 7, 70, [[u1, 0], [u2, 0], [u3, 0]]));
    assert.deepEqual(pending.listPending(t, u2, 10), [{ channel: ch("g1____cmd"), lastMsgSeq: 7, activeAt: 70, readSeq: 5 }]);
  });

  it("disjoint recipients: (5, 50, u1) then (7, 70, u2) → u1 stays 5/50, u2 7/70; markSynced(u1, 5) removes u1", () => {
    const { pending } = updater();
    const t = newUuid();
    const [u1, u2] = [newUuid(), newUuid()];
    pending.pushIntent(intent(t, "g1____cmd", 5, 50, [[u1, 0]]));
    pending.pushIntent(intent(t, "g1____cmd", 7, 70, [[u2, 0]]));
    assert.deepEqual(pending.listPending(t, u1, 10), [{ channel: ch("g1____cmd"), lastMsgSeq: 5, activeAt: 50, readSeq: 0 }]);
    assert.deepEqual(pending.listPending(t, u2, 10), [{ channel: ch("g1____cmd"), lastMsgSeq: 7, activeAt: 70, readSeq: 0 }]);
    pending.markSynced(t, u1, ch("g1____cmd"), 5);
    assert.deepEqual(pending.listPending(t, u1, 10), []);
    assert.equal(pending.listPending(t, u2, 10).length, 1);
  });

  it("markSynced(u1, 9) with pending seq 9 removes u1 only; markSynced(u1, 8) keeps it; the type is part of the key", () => {
    const { pending } = updater();
    const t = newUuid();
    const [u1, u2] = [newUuid(), newUuid()];
    pending.pushIntent(intent(t, "g1____cmd", 9, 90, [[u1, 0], [u2, 0]]));
    pending.markSynced(t, u1, ch("g1____cmd"), 8);
    assert.equal(pending.listPending(t, u1, 10).length, 1);
    pending.markSynced(t, u1, ch("g1____cmd", 1), 9);
    assert.equal(pending.listPending(t, u1, 10).length, 1);
    pending.markSynced(t, u1, ch("g1____cmd"), 9);
    assert.deepEqual(pending.listPending(t, u1, 10), []);
    assert.deepEqual(pending.listPending(t, u2, 10), [{ channel: ch("g1____cmd"), lastMsgSeq: 9, activeAt: 90, readSeq: 0 }]);
    assert.equal(pending.size(), 1);
  });

  it("listPending: (activeAt DESC, type, id), limit applied, another tenant's same user id apart", () => {
    const { pending } = updater();
    const t = newUuid();
    const u = newUuid();
    pending.pushIntent(intent(t, "b____cmd", 1, 100, [[u, 0]]));
    pending.pushIntent(intent(t, "a____cmd", 1, 100, [[u, 0]]));
    pending.pushIntent(intent(t, "a____cmd", 1, 100, [[u, 0]], 1));
    pending.pushIntent(intent(t, "z____cmd", 1, 300, [[u, 0]]));
    pending.pushIntent(intent(newUuid(), "y____cmd", 1, 999, [[u, 0]]));
    assert.deepEqual(pending.listPending(t, u, 10).map((v) => `${v.channel.channelType}/${v.channel.channelId}`), ["2/z____cmd", "1/a____cmd", "2/a____cmd", "2/b____cmd"]);
    assert.equal(pending.listPending(t, u, 2).length, 2);
  });

  it("validation before any write: read > seq, seq 0, type 0, a non-command id throw; blank keys are dropped", () => {
    const { pending } = updater();
    const t = newUuid();
    const u = newUuid();
    assert.throws(() => pending.pushIntent(intent(t, "g1____cmd", 5, 1, [[u, 6]])), InvalidArgumentError);
    assert.throws(() => pending.pushIntent(intent(t, "g1____cmd", 0, 1, [[u, 0]])), InvalidArgumentError);
    assert.throws(() => pending.pushIntent(intent(t, "g1____cmd", 5, 1, [[u, 0]], 0)), InvalidArgumentError);
    assert.throws(() => pending.pushIntent(intent(t, "g1", 5, 1, [[u, 0]])), InvalidArgumentError);
    assert.throws(() => pending.pushIntent(intent(t, "g1____cmd", 5, 1, [["" as Uuid, 0]])), InvalidArgumentError, "nothing left");
    assert.equal(pending.size(), 0);
    assert.equal(pending.pushIntent(intent(t, "g1____cmd", 5, 1, [["" as Uuid, 0], [u, 0]])), true);
    assert.equal(pending.size(), 1);
  });

  it("bounded: a full queue drops the intent whole and counts it, never blocks; merges into held entries still pass", async () => {
    const { pending } = updater({ maxPending: 2 });
    const t = newUuid();
    const [u1, u2, u3] = [newUuid(), newUuid(), newUuid()];
    const dropped0 = await counter("qim_cmd_intents_total", { outcome: "dropped" });
    assert.equal(pending.pushIntent(intent(t, "g1____cmd", 1, 1, [[u1, 0]])), true);
    assert.equal(pending.pushIntent(intent(t, "g2____cmd", 1, 1, [[u2, 0], [u3, 0]])), false);
    assert.equal(pending.size(), 1);
    assert.deepEqual(pending.listPending(t, u2, 10), []);
    assert.equal(pending.pushIntent(intent(t, "g2____cmd", 1, 1, [[u2, 0]])), true);
    assert.equal(pending.pushIntent(intent(t, "g3____cmd", 1, 1, [[u3, 0]])), false);
    assert.equal(pending.pushIntent(intent(t, "g1____cmd", 4, 4, [[u1, 0]])), true, "a merge adds no entry");
    assert.equal(pending.listPending(t, u1, 10)[0]!.lastMsgSeq, 4);
    assert.equal(await counter("qim_cmd_intents_total", { outcome: "dropped" }) - dropped0, 2);
  });

  it("flush: rows written in (activeAt asc, type, id, uid) order per slot, batches ≤ batch size of one slot each; entries leave the buffer", async () => {
    const t = newUuid();
    const [a, b] = usersInSlot(t, 2);
    const c = userOutside(t, [slotOfUser(t, a!)]);
    const { pending, realStates: states } = updater({ flushBatchSize: 1 });
    pending.pushIntent(intent(t, "z____cmd", 3, 30, [[a!, 0]]));
    pending.pushIntent(intent(t, "m____cmd", 2, 10, [[b!, 2], [a!, 0]]));
    pending.pushIntent(intent(t, "m____cmd", 2, 10, [[a!, 0]], 1));
    pending.pushIntent(intent(t, "x____cmd", 1, 20, [[c, 0]]));
    const report = await pending.flush();
    assert.deepEqual(report, { rows: 5, batches: 5, failedBatches: 0 });
    assert.equal(pending.size(), 0);
    // now() is called once per batch (1, 2, …): a row's updatedAt is its batch's place in the flush.
    // Within a slot: (activeAt asc, type, id, uid); slots in the order of their oldest entry (a's
    // slot holds the active-10 rows, c's slot only the active-20 one).
    const [first, second] = [a!, b!].sort();
    const expected = [
      [a!, ch("m____cmd", 1)], [first!, ch("m____cmd")], [second!, ch("m____cmd")], [a!, ch("z____cmd")], [c, ch("x____cmd")],
    ] as const;
    const got: number[] = [];
    for (const [u, channel] of expected) got.push((await states.get(t, u, channel))!.updatedAt);
    assert.deepEqual(got, [1, 2, 3, 4, 5]);
    assert.equal((await states.get(t, b!, ch("m____cmd")))!.readSeq, 2);
    assert.equal((await states.get(t, a!, ch("z____cmd")))!.activeAt, 30);
  });

  it("flush: a batch of 500 holds one slot's rows only (two slots → two batches), and a replayed flush changes no row", async () => {
    const t = newUuid();
    const a = newUuid();
    const c = userOutside(t, [slotOfUser(t, a)]);
    const entered: number[] = [];
    const released: number[] = [];
    const { pending, realStates: states } = updater({ fenceOf: (slot) => { entered.push(slot); return SOLO; }, releaseFence: (slot) => released.push(slot) });
    pending.pushIntent(intent(t, "g1____cmd", 4, 40, [[a, 4], [c, 0]]));
    assert.deepEqual(await pending.flush(), { rows: 2, batches: 2, failedBatches: 0 });
    assert.deepEqual(released.sort(), [slotOfUser(t, a), slotOfUser(t, c)].sort(), "each fence taken is released once");
    assert.deepEqual(entered.sort(), released);
    const before = await states.get(t, a, ch("g1____cmd"));
    // the catch-up scan re-derives an older intent: buffered again, flushed again, the row keeps its max
    pending.pushIntent(intent(t, "g1____cmd", 2, 20, [[a, 0]]));
    await pending.flush();
    const afterwards = await states.get(t, a, ch("g1____cmd"));
    assert.deepEqual(afterwards, before, "updated at included: a replay writes nothing");
    assert.equal(afterwards!.readSeq, 4, "a recipient's 0 never lowers a persisted read");
  });

  it("a failing store keeps every entry pending and the flush rejects with its error", async () => {
    const t = newUuid();
    const [a, b] = usersInSlot(t, 2);
    const { pending, space } = updater();
    await takeLease(fx.store, space, slotOfUser(t, a!));
    const failures0 = await counter("qim_cmd_flush_failures_total");
    pending.pushIntent(intent(t, "g1____cmd", 3, 30, [[a!, 0], [b!, 0]]));
    await assert.rejects(pending.flush(), CmdFencedError);
    assert.equal(pending.size(), 2);
    assert.equal(pending.listPending(t, a!, 10).length, 1);
    assert.equal(await counter("qim_cmd_flush_failures_total") - failures0, 1);
  });

  it("batch size 1, the second batch failing: the first entry is removed, the second stays", async () => {
    const t = newUuid();
    const a = newUuid();
    const b = userOutside(t, [slotOfUser(t, a)]);
    const { pending, space, realStates: states } = updater({ flushBatchSize: 1 });
    await takeLease(fx.store, space, slotOfUser(t, b));
    pending.pushIntent(intent(t, "g1____cmd", 5, 50, [[a, 0]]));
    pending.pushIntent(intent(t, "g2____cmd", 7, 70, [[b, 0]]));
    await assert.rejects(pending.flush(), CmdFencedError);
    assert.deepEqual(pending.listPending(t, a, 10), []);
    assert.equal(pending.listPending(t, b, 10).length, 1);
    assert.equal((await states.get(t, a, ch("g1____cmd")))!.activeAt, 50);
    assert.equal(await states.get(t, b, ch("g2____cmd")), null);
  });

  it("an entry that moved during the flush stays (the intent that arrived meanwhile is not lost)", async () => {
    const t = newUuid();
    const u = newUuid();
    const { states: real } = fx.fresh();
    let during: (() => void) | null = null;
    const store: CmdStateStore = {
      listActive: (...a) => real.listActive(...a),
      listUnread: (...a) => real.listUnread(...a),
      getMany: (...a) => real.getMany(...a),
      get: (...a) => real.get(...a),
      advanceReadSeqs: (...a) => real.advanceReadSeqs(...a),
      upsertStates: async (rows: readonly CmdConversationState[], fence: Fence) => {
        during?.();
        during = null;
        await real.upsertStates(rows, fence);
      },
    };
    const pending = new CmdPendingUpdater({ store, dataDir: null, slotOf: slotOfUser, fenceOf: () => SOLO, flushIntervalMs: 0, log: () => {} });
    pending.pushIntent(intent(t, "g1____cmd", 5, 50, [[u, 0]]));
    during = () => pending.pushIntent(intent(t, "g1____cmd", 6, 60, [[u, 0]]));
    await pending.flush();
    assert.deepEqual(pending.listPending(t, u, 10), [{ channel: ch("g1____cmd"), lastMsgSeq: 6, activeAt: 60, readSeq: 0 }]);
    assert.equal((await real.get(t, u, ch("g1____cmd")))!.activeAt, 50);
    await pending.flush();
    assert.equal(pending.size(), 0);
    assert.equal((await real.get(t, u, ch("g1____cmd")))!.activeAt, 60);
  });

  it("a slot no longer ours is dropped, not flushed; dropSlot and oldestPendingAt work per slot", async () => {
    const t = newUuid();
    const a = newUuid();
    const b = userOutside(t, [slotOfUser(t, a)]);
    const lost = slotOfUser(t, b);
    const { pending, realStates: states } = updater({ fenceOf: (slot) => (slot === lost ? null : SOLO) });
    pending.pushIntent(intent(t, "g1____cmd", 5, 50, [[a, 0], [b, 0]]));
    pending.pushIntent(intent(t, "g2____cmd", 6, 40, [[b, 0]]));
    assert.equal(pending.oldestPendingAt(lost), 40);
    assert.equal(pending.oldestPendingAt(slotOfUser(t, a)), 50);
    const empty = [0, 1, 2].find((s) => s !== lost && s !== slotOfUser(t, a))!;
    assert.equal(pending.oldestPendingAt(empty), null);
    assert.deepEqual(await pending.flush(), { rows: 1, batches: 1, failedBatches: 0 });
    assert.equal(pending.size(), 0);
    assert.equal(await states.get(t, b, ch("g1____cmd")), null);
    pending.pushIntent(intent(t, "g3____cmd", 1, 1, [[a, 0]]));
    pending.dropSlot(slotOfUser(t, a));
    assert.equal(pending.size(), 0);
    assert.equal(pending.oldestPendingAt(slotOfUser(t, a)), null);
  });

  it("start() runs the ticker: an entry reaches the durable state without an explicit flush; stop() leaves nothing pending", async () => {
    const t = newUuid();
    const u = newUuid();
    const { pending, realStates: states } = updater({ flushIntervalMs: 10 });
    await pending.start();
    pending.pushIntent(intent(t, "g1____cmd", 3, 30, [[u, 1]]));
    let row = null;
    for (let i = 0; i < 1000 && row === null; i++) {
      await new Promise((r) => setTimeout(r, 10));
      row = await states.get(t, u, ch("g1____cmd"));
    }
    assert.equal(row?.readSeq, 1, "the ticker flushed the entry");
    pending.pushIntent(intent(t, "g1____cmd", 4, 40, [[u, 0]]));
    await pending.stop();
    assert.equal(pending.size(), 0);
    assert.equal((await states.get(t, u, ch("g1____cmd")))!.activeAt, 40, "stop's last flush wrote the newest entry");
  });

  it("a replay of what an ack or a flush settled makes no entry for CMD_SETTLED_MEMORY_MS (counted); a newer intent does, and so does the replay after the memory", async () => {
    let now = 1_000;
    const { pending } = updater({ settledClock: () => now });
    const t = newUuid();
    const [u1, u2] = [newUuid(), newUuid()];
    const skippedBefore = await counter("qim_cmd_pending_replays_skipped_total");
    pending.pushIntent(intent(t, "g1____cmd", 2, 20, [[u1, 0], [u2, 0]]));
    // u1 acks through 2 (the sync app wrote read seq 2 durably first); the scan then pushes seq 2 again
    pending.markSynced(t, u1, ch("g1____cmd"), 2);
    pending.pushIntent(intent(t, "g1____cmd", 2, 20, [[u1, 0], [u2, 0]]));
    assert.deepEqual(pending.listPending(t, u1, 10), [], "the acknowledged message does not come back as unread");
    assert.deepEqual(pending.listPending(t, u2, 10), [{ channel: ch("g1____cmd"), lastMsgSeq: 2, activeAt: 20, readSeq: 0 }]);
    // u2's entry is flushed; its replay makes nothing either
    await pending.flush();
    pending.pushIntent(intent(t, "g1____cmd", 2, 20, [[u2, 0]]));
    assert.equal(pending.size(), 0);
    assert.equal(await counter("qim_cmd_pending_replays_skipped_total") - skippedBefore, 2);
    // something newer in any one of the three values is an entry
    pending.pushIntent(intent(t, "g1____cmd", 2, 21, [[u1, 0]]));
    assert.deepEqual(pending.listPending(t, u1, 10), [{ channel: ch("g1____cmd"), lastMsgSeq: 2, activeAt: 21, readSeq: 0 }]);
    // the memory ends: a replay is an entry again (a harmless max merge, as before)
    now += CMD_SETTLED_MEMORY_MS;
    pending.pushIntent(intent(t, "g1____cmd", 2, 20, [[u2, 0]]));
    assert.deepEqual(pending.listPending(t, u2, 10), [{ channel: ch("g1____cmd"), lastMsgSeq: 2, activeAt: 20, readSeq: 0 }]);
  });

  it("shards: FNV-32a vectors, and the shard of (id, type) is FNV-32a(id ‖ type byte) mod 16", () => {
    assert.equal(fnv32a(new Uint8Array()), 0x811c9dc5);
    assert.equal(fnv32a(Buffer.from("a")), 0xe40c292c);
    assert.equal(fnv32a(Buffer.from("foobar")), 0xbf9cf968);
    assert.equal(pendingShardOf(ch("g1____cmd", 2), 16), fnv32a(Buffer.concat([Buffer.from("g1____cmd"), Buffer.of(2)])) % 16);
    assert.equal(pendingShardOf(ch("a", 0x61), 1), 0);
    // "a" + byte 0x61 is the string "aa"
    assert.equal(pendingShardOf(ch("a", 0x61), 1 << 30), fnv32a(Buffer.from("aa")) % (1 << 30));
  });
});
