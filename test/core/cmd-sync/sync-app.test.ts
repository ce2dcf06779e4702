/**
 * CmdSyncApp (spec 001 cmdsync.App) over the real Redis state store and the real pending buffer.
 * The message source is the spec's own test technique: messages held in the test, and a record of
 * which (channel, afterSeq, limit) each load asked for.
 */
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import {
  CmdFencedError, CmdPendingUpdater, CmdSyncApp, CmdSyncRecords, newUuid, slotOfUser, StaleOwnerError, stripCommandSuffix,
  type CmdMessage, type CmdMessageSource, type CmdPendingBuffer, type CommandChannelKey, type Uuid,
} from "../../../core/index.js";
import { releaseLease, SOLO, takeLease, useCmdRedis } from "./fixture.js";

const fx = useCmdRedis("single");
const ch = (channelId: string, channelType = 2) => ({ channelId, channelType });

class RecordingSource implements CmdMessageSource {
  readonly calls: string[] = [];
  private readonly byChannel = new Map<string, CmdMessage[]>();
  constructor(private readonly tenant: Uuid) {}
  add(channelId: string, seq: number, timestampMs: number, channelType = 2): void {
    const k = `${channelType}|${channelId}`;
    const list = this.byChannel.get(k) ?? [];
    list.push({
      tenant: this.tenant, channel: ch(channelId, channelType), messageSeq: seq, messageId: newUuid(), clientMsgNo: `c${seq}`, from: null, timestampMs,
      redDot: false, syncOnce: false, noPersist: false, payload: new Uint8Array([seq]), recipients: [],
    });
    this.byChannel.set(k, list.sort((a, b) => a.messageSeq - b.messageSeq));
  }
  async load(_tenant: Uuid, channel: CommandChannelKey, afterSeq: number, limit: number, _forUser?: Uuid): Promise<CmdMessage[]> {
    this.calls.push(`${channel.channelId} from ${afterSeq + 1} limit ${limit}`);
    return (this.byChannel.get(`${channel.channelType}|${channel.channelId}`) ?? []).filter((m) => m.messageSeq > afterSeq).slice(0, limit);
  }
}

function setup(opts: { pending?: CmdPendingBuffer; owned?: () => boolean } = {}) {
  const { space, states } = fx.fresh();
  const tenant = newUuid();
  const user = newUuid();
  const clock = { now: 1_000_000 };
  const buffer = new CmdPendingUpdater({ store: states, dataDir: null, slotOf: slotOfUser, fenceOf: () => SOLO, flushIntervalMs: 0, log: () => {} });
  const pending = opts.pending ?? buffer;
  const source = new RecordingSource(tenant);
  const records = new CmdSyncRecords(() => clock.now);
  const app = new CmdSyncApp({
    states, pending, messages: source, fenceOf: () => (opts.owned?.() === false ? null : SOLO), now: () => clock.now, records, log: () => {},
  });
  return { space, states, buffer, source, app, tenant, user, clock, records };
}

/** A durable row; its last seq 1,000 says "unread as far as the durable state knows": the messages held in the source decide what is answered. */
const seed = (tenant: Uuid, user: Uuid, channelId: string, readSeq: number, activeAt: number, deletedToSeq = 0) =>
  ({ tenant, user, channel: ch(channelId), readSeq, deletedToSeq, activeAt, updatedAt: 1, lastMsgSeq: 1_000 });

describe("CmdSyncApp.sync", () => {
  it("states g1 (read 1, deleted-to 3, active 100), g2 (read 5, active 200), e (read 9, active 50): order and limit decided before loading", async () => {
    const { states, source, app, tenant, user, records } = setup();
    await states.upsertStates([seed(tenant, user, "g1____cmd", 1, 100, 3), seed(tenant, user, "g2____cmd", 5, 200), seed(tenant, user, "e____cmd", 9, 50)], SOLO);
    source.add("g1____cmd", 4, 20);
    source.add("g1____cmd", 5, 10);
    source.add("g2____cmd", 6, 15);
    // limit 2: g2 first (active 200) answers 6, g1 gets what is left (1) and answers 4, e nothing.
    // The candidates of one wave are loaded at once, each with the limit left when the wave began
    // (2), from its effective read + 1 — the notes' "loads g2 from 6, g1 from 4, e from 10" — and
    // then taken in order with what is left at each, so the answer is that of loading one by one.
    const r = await app.sync(tenant, user, 2);
    assert.deepEqual(source.calls, ["g2____cmd from 6 limit 2", "g1____cmd from 4 limit 2", "e____cmd from 10 limit 2"]);
    assert.deepEqual(r.messages.map((m) => `${m.channel.channelId}#${m.messageSeq}`), ["g2____cmd#6", "g1____cmd#4"]);
    assert.deepEqual(records.peek(tenant, user)!.records.map((x) => `${x.channel.channelId}:${x.lastReturnedMsgSeq}`), ["g2____cmd:6", "g1____cmd:4"]);
    // with room, every candidate is asked from its effective read + 1: g2 from 6, g1 from 4, e from 10
    source.calls.length = 0;
    const all = await app.sync(tenant, user, 10);
    assert.deepEqual(source.calls, ["g2____cmd from 6 limit 10", "g1____cmd from 4 limit 10", "e____cmd from 10 limit 10"]);
    // by time, each channel's own order kept: g1#5 (ts 10) is after g1#4 (ts 20) in its channel
    assert.deepEqual(all.messages.map((m) => `${m.channel.channelId}#${m.messageSeq}`), ["g2____cmd#6", "g1____cmd#4", "g1____cmd#5"]);
    assert.ok(all.generation! > r.generation!);
    assert.deepEqual(records.peek(tenant, user)!.records.map((x) => `${x.channel.channelId}:${x.lastReturnedMsgSeq}`), ["g2____cmd:6", "g1____cmd:5"], "no record for e: nothing new");
  });

  it("40 candidates (two load waves), 2 new messages each, limit 45: the 22 newest channels answer both, the 23rd its first, the rest nothing — each an unbroken run", async () => {
    const { states, source, app, tenant, user, records } = setup();
    const names = Array.from({ length: 40 }, (_, i) => `w${String(i).padStart(2, "0")}____cmd`);
    // w00 is the most recently active: candidates in the order w00, w01, … w39
    await states.upsertStates(names.map((n, i) => seed(tenant, user, n, 0, 10_000 - i)), SOLO);
    names.forEach((n, i) => { source.add(n, 1, 100 + i); source.add(n, 2, 100 + i); });
    const r = await app.sync(tenant, user, 45);
    const expected = [...names.slice(0, 22).flatMap((n) => [`${n}#1`, `${n}#2`]), `${names[22]}#1`];
    assert.deepEqual(r.messages.map((m) => `${m.channel.channelId}#${m.messageSeq}`).sort(), expected.sort());
    assert.deepEqual(records.peek(tenant, user)!.records.map((x) => `${x.channel.channelId}:${x.lastReturnedMsgSeq}`),
      [...names.slice(0, 22).map((n) => `${n}:2`), `${names[22]}:1`]);
    // the second wave (candidates 33 … 40) is never loaded: the limit was used up inside the first
    assert.equal(source.calls.length, 32);
    // with room for all: both waves loaded (32 + 8 calls), every channel's two messages answered
    source.calls.length = 0;
    const all = await app.sync(tenant, user, 100);
    assert.equal(source.calls.length, 40);
    assert.equal(all.messages.length, 80);
  });

  it("merges the pending overlay: pending-only channels are loaded; ids keep their suffix (`nested____cmd____cmd` strips once to `nested____cmd`)", async () => {
    const { buffer, source, app, tenant, user } = setup();
    buffer.pushIntent({ tenant, channel: ch("g1____cmd"), messageSeq: 1, activeAt: 10, userReadSeqs: new Map([[user, 0]]) });
    buffer.pushIntent({ tenant, channel: ch("nested____cmd____cmd"), messageSeq: 2, activeAt: 20, userReadSeqs: new Map([[user, 0]]) });
    source.add("g1____cmd", 1, 20);
    source.add("nested____cmd____cmd", 2, 21);
    const r = await app.sync(tenant, user, 10);
    assert.deepEqual(r.messages.map((m) => [m.channel.channelId, m.messageSeq]), [["g1____cmd", 1], ["nested____cmd____cmd", 2]]);
    // what the legacy surface answers (it strips exactly one suffix)
    assert.deepEqual(r.messages.map((m) => stripCommandSuffix(m.channel.channelId)), ["g1", "nested____cmd"]);
    assert.deepEqual(source.calls, ["nested____cmd____cmd from 1 limit 10", "g1____cmd from 1 limit 10"]);
  });

  it("effective read = max(persisted 5, pending 0) → from 6; a pending 0 only activates (moves the channel to the front)", async () => {
    const { states, buffer, source, app, tenant, user } = setup();
    await states.upsertStates([seed(tenant, user, "g1____cmd", 5, 100), seed(tenant, user, "g2____cmd", 0, 150)], SOLO);
    buffer.pushIntent({ tenant, channel: ch("g1____cmd"), messageSeq: 4, activeAt: 200, userReadSeqs: new Map([[user, 0]]) });
    await app.sync(tenant, user, 10);
    assert.deepEqual(source.calls, ["g1____cmd from 6 limit 10", "g2____cmd from 1 limit 10"]);
  });

  it("the sender's own pending read (= its seq) keeps its own command from being answered; no record for it", async () => {
    const { buffer, source, app, tenant, user, records } = setup();
    buffer.pushIntent({ tenant, channel: ch("g1____cmd"), messageSeq: 3, activeAt: 10, userReadSeqs: new Map([[user, 3]]) });
    source.add("g1____cmd", 3, 10);
    const r = await app.sync(tenant, user, 10);
    // read 3 = last 3: not unread, so not even a candidate (nothing loaded)
    assert.deepEqual(source.calls, []);
    assert.deepEqual(r.messages, []);
    assert.deepEqual(records.peek(tenant, user)!.records, []);
  });

  it("limit: ≤ 0 → the default 200, above 10000 → 10000", async () => {
    const { states, source, app, tenant, user } = setup();
    await states.upsertStates([seed(tenant, user, "g1____cmd", 0, 1)], SOLO);
    await app.sync(tenant, user, 0);
    await app.sync(tenant, user, 50_000);
    assert.deepEqual(source.calls, ["g1____cmd from 1 limit 200", "g1____cmd from 1 limit 10000"]);
  });

  it("a user whose slot is not ours: StaleOwnerError (STALE_OWNER) for sync and ack", async () => {
    const released: Uuid[] = [];
    const owned = setup();
    const app2 = new CmdSyncApp({ states: owned.states, pending: owned.buffer, messages: owned.source, fenceOf: () => SOLO, releaseFence: (_t, u) => released.push(u), log: () => {} });
    await app2.sync(owned.tenant, owned.user, 10);
    await app2.ack(owned.tenant, owned.user, 1);
    assert.deepEqual(released, [owned.user, owned.user], "the fence of each sync and ack is released");
    const { app, tenant, user } = setup({ owned: () => false });
    await assert.rejects(app.sync(tenant, user, 10), (e: unknown) => e instanceof StaleOwnerError && e.code === "STALE_OWNER");
    await assert.rejects(app.ack(tenant, user, 1), StaleOwnerError);
  });
});

describe("CmdSyncApp.ack", () => {
  it("records {g1:7, not-cmd:8, zero____cmd:0}: one patch (read 7); a second ack writes nothing", async () => {
    const { states, app, tenant, user, records, clock } = setup();
    await states.upsertStates([seed(tenant, user, "g1____cmd", 1, 100)], SOLO);
    records.replace(tenant, user, [{ channel: ch("old____cmd"), lastReturnedMsgSeq: 3, pending: false, pendingActiveAt: 0 }]);
    const latest = records.replace(tenant, user, [
      { channel: ch("g1____cmd"), lastReturnedMsgSeq: 7, pending: false, pendingActiveAt: 0 },
      { channel: ch("not-cmd"), lastReturnedMsgSeq: 8, pending: false, pendingActiveAt: 0 },
      { channel: ch("zero____cmd"), lastReturnedMsgSeq: 0, pending: false, pendingActiveAt: 0 },
    ]);
    clock.now = 1_002_000;
    assert.deepEqual(await app.ack(tenant, user, 99_999), { generation: latest, advanced: 1, cleared: 0, warning: null });
    assert.deepEqual(await states.get(tenant, user, ch("g1____cmd")), { ...seed(tenant, user, "g1____cmd", 7, 100), updatedAt: 1_002_000 });
    assert.equal(await states.get(tenant, user, ch("old____cmd")), null, "only the latest generation");
    clock.now = 1_003_000;
    assert.deepEqual(await app.ack(tenant, user, 99_999), { generation: null, advanced: 0, cleared: 0, warning: null });
    assert.equal((await states.get(tenant, user, ch("g1____cmd")))!.updatedAt, 1_002_000);
  });

  it("pending-only channel: the row is created with the pending active time (not the ack time), then the pending entry is cleared", async () => {
    const { states, buffer, source, app, tenant, user, clock } = setup();
    buffer.pushIntent({ tenant, channel: ch("g1____cmd"), messageSeq: 9, activeAt: 100, userReadSeqs: new Map([[user, 0]]) });
    source.add("g1____cmd", 8, 90);
    source.add("g1____cmd", 9, 100);
    const synced = await app.sync(tenant, user, 10);
    clock.now = 1_005_000;
    assert.deepEqual(await app.ack(tenant, user, 9), { generation: synced.generation, advanced: 1, cleared: 1, warning: null });
    assert.deepEqual(await states.get(tenant, user, ch("g1____cmd")), { tenant, user, channel: ch("g1____cmd"), readSeq: 9, deletedToSeq: 0, activeAt: 100, updatedAt: 1_005_000, lastMsgSeq: 9 });
    assert.deepEqual(buffer.listPending(tenant, user, 10), []);
  });

  it("a newer intent between sync and ack: the durable read advances to what was answered, the pending entry stays (8 < 9)", async () => {
    const { states, buffer, source, app, tenant, user } = setup();
    buffer.pushIntent({ tenant, channel: ch("g1____cmd"), messageSeq: 8, activeAt: 80, userReadSeqs: new Map([[user, 0]]) });
    source.add("g1____cmd", 8, 80);
    await app.sync(tenant, user, 10);
    buffer.pushIntent({ tenant, channel: ch("g1____cmd"), messageSeq: 9, activeAt: 90, userReadSeqs: new Map([[user, 0]]) });
    await app.ack(tenant, user, 8);
    assert.equal((await states.get(tenant, user, ch("g1____cmd")))!.readSeq, 8);
    assert.deepEqual(buffer.listPending(tenant, user, 10), [{ channel: ch("g1____cmd"), lastMsgSeq: 9, activeAt: 90, readSeq: 0 }]);
  });

  it("a refused upsert clears nothing and rejects; the record stays, so the retry after the lease comes back succeeds", async () => {
    const { space, states, buffer, source, app, tenant, user } = setup();
    buffer.pushIntent({ tenant, channel: ch("g1____cmd"), messageSeq: 2, activeAt: 20, userReadSeqs: new Map([[user, 0]]) });
    source.add("g1____cmd", 2, 20);
    const synced = await app.sync(tenant, user, 10);
    await takeLease(fx.store, space, slotOfUser(tenant, user));
    await assert.rejects(app.ack(tenant, user, 2), CmdFencedError);
    assert.equal(buffer.listPending(tenant, user, 10).length, 1);
    assert.equal(await states.get(tenant, user, ch("g1____cmd")), null);
    await releaseLease(fx.store, space, slotOfUser(tenant, user));
    assert.deepEqual(await app.ack(tenant, user, 2), { generation: synced.generation, advanced: 1, cleared: 1, warning: null });
    assert.equal((await states.get(tenant, user, ch("g1____cmd")))!.readSeq, 2);
  });

  it("a clean-up failure after the durable write is a warning of a successful ack", async () => {
    const { states, app: _unused, tenant, user, source, records } = setup();
    const { buffer } = setup();
    const failing: CmdPendingBuffer = {
      pushIntent: (i) => buffer.pushIntent(i),
      listPending: (t, u, l, unread) => buffer.listPending(t, u, l, unread),
      pendingView: (t, u, c) => buffer.pendingView(t, u, c),
      flush: () => buffer.flush(),
      markSynced: () => { throw new Error("mark synced failed"); },
    };
    const app = new CmdSyncApp({ states, pending: failing, messages: source, fenceOf: () => SOLO, records, log: () => {} });
    buffer.pushIntent({ tenant, channel: ch("g1____cmd"), messageSeq: 9, activeAt: 100, userReadSeqs: new Map([[user, 0]]) });
    source.add("g1____cmd", 9, 100);
    await app.sync(tenant, user, 10);
    const r = await app.ack(tenant, user, 9);
    assert.equal(r.advanced, 1);
    assert.equal(r.cleared, 0);
    assert.match(r.warning!, /mark synced failed/);
    assert.equal((await states.get(tenant, user, ch("g1____cmd")))!.readSeq, 9);
  });

  it("only the latest generation is applied; records expire after 5 minutes", async () => {
    const { states, source, app, tenant, user, clock } = setup();
    await states.upsertStates([seed(tenant, user, "g1____cmd", 0, 100), seed(tenant, user, "g2____cmd", 0, 200)], SOLO);
    source.add("g1____cmd", 1, 1);
    source.add("g2____cmd", 1, 1);
    await app.sync(tenant, user, 1); // generation 1: g2:1
    await app.sync(tenant, user, 10); // generation 2: g2:1, g1:1
    await app.ack(tenant, user, 1);
    assert.equal((await states.get(tenant, user, ch("g1____cmd")))!.readSeq, 1);
    source.add("g1____cmd", 2, 2);
    await app.sync(tenant, user, 10);
    clock.now += 5 * 60_000 + 1;
    assert.deepEqual(await app.ack(tenant, user, 2), { generation: null, advanced: 0, cleared: 0, warning: null });
    assert.equal((await states.get(tenant, user, ch("g1____cmd")))!.readSeq, 1);
  });
});

describe("CmdSyncApp: an operator's peek and the ack's last_message_seq (issue 24)", () => {
  it("the app syncs A, an operator peeks A and B, the app acks seq 1: its ack applies its own sync (read 1), and its next sync answers B", async () => {
    const { states, source, app, tenant, user, records } = setup();
    await states.upsertStates([seed(tenant, user, "g1____cmd", 0, 100)], SOLO);
    source.add("g1____cmd", 1, 10); // A
    const appSync = await app.sync(tenant, user, 10);
    assert.deepEqual(appSync.messages.map((m) => m.messageSeq), [1]);
    source.add("g1____cmd", 2, 20); // B, after the app's sync
    const look = await app.sync(tenant, user, 10, "peek");
    assert.deepEqual(look.messages.map((m) => m.messageSeq), [1, 2], "the peek answers what the user's next sync would");
    assert.equal(look.generation, null, "a peek records no generation");
    assert.equal(records.peek(tenant, user)!.generation, appSync.generation, "the app's generation is still the latest");
    const acked = await app.ack(tenant, user, 1);
    assert.deepEqual(acked, { generation: appSync.generation, advanced: 1, cleared: 0, warning: null });
    assert.equal((await states.get(tenant, user, ch("g1____cmd")))!.readSeq, 1, "the ack applied A only");
    assert.deepEqual((await app.sync(tenant, user, 10)).messages.map((m) => m.messageSeq), [2], "B is delivered");
  });

  it("last_message_seq bounds nothing: a sync answering seq 1 and 2, acked with 1, reads the channel to 2 (spec 001: the latest generation)", async () => {
    const { states, source, app, tenant, user } = setup();
    await states.upsertStates([seed(tenant, user, "g1____cmd", 0, 100)], SOLO);
    source.add("g1____cmd", 1, 10);
    source.add("g1____cmd", 2, 20);
    const r = await app.sync(tenant, user, 10);
    assert.deepEqual(r.messages.map((m) => m.messageSeq), [1, 2]);
    assert.deepEqual(await app.ack(tenant, user, 1), { generation: r.generation, advanced: 1, cleared: 0, warning: null });
    assert.equal((await states.get(tenant, user, ch("g1____cmd")))!.readSeq, 2);
    assert.deepEqual(await app.ack(tenant, user, 2), { generation: null, advanced: 0, cleared: 0, warning: null }, "a second ack finds no generation");
  });
});

describe("CmdSyncApp: one user's sync and ack run one at a time", () => {
  it("[sync, ack, sync] issued at once while the first sync is loading: the sync answers g1#1, the ack applies it (advanced 1, read 1), the second sync answers nothing; another user is not held up", async () => {
    const { states, source, app, tenant, user } = setup();
    await states.upsertStates([seed(tenant, user, "g1____cmd", 0, 100)], SOLO);
    source.add("g1____cmd", 1, 10);
    // every load of this user waits for the gate: the first sync is still loading when the ack and
    // the second sync are called
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const load = source.load.bind(source);
    source.load = async (...args: Parameters<RecordingSource["load"]>) => {
      if (args[4] === user) await gate;
      return load(...args);
    };
    const first = app.sync(tenant, user, 10);
    const ack = app.ack(tenant, user, 1);
    const second = app.sync(tenant, user, 10);
    // a second user of the same app is served while the first user's sync is held
    const other = newUuid();
    await states.upsertStates([seed(tenant, other, "g9____cmd", 0, 100)], SOLO);
    source.add("g9____cmd", 1, 10);
    const otherSync = await app.sync(tenant, other, 10);
    assert.deepEqual(otherSync.messages.map((m) => `${m.channel.channelId}#${m.messageSeq}`), ["g9____cmd#1"]);
    open();
    assert.deepEqual((await first).messages.map((m) => `${m.channel.channelId}#${m.messageSeq}`), ["g1____cmd#1"]);
    // without the per-user order the ack ran before the first sync recorded anything: advanced 0
    assert.deepEqual(await ack, { generation: (await first).generation, advanced: 1, cleared: 0, warning: null });
    assert.deepEqual((await second).messages, [], "the ack applied the latest sync: nothing left");
    assert.equal((await states.get(tenant, user, ch("g1____cmd")))!.readSeq, 1);
  });

  it("a failed operation does not stop the user's queue: a sync whose load fails rejects, the ack after it applies nothing, the next sync answers", async () => {
    const { states, source, app, tenant, user } = setup();
    await states.upsertStates([seed(tenant, user, "g1____cmd", 0, 100)], SOLO);
    source.add("g1____cmd", 1, 10);
    const load = source.load.bind(source);
    let fail = true;
    source.load = async (...args: Parameters<RecordingSource["load"]>) => {
      if (fail) {
        fail = false;
        throw new Error("load failed");
      }
      return load(...args);
    };
    const failed = app.sync(tenant, user, 10);
    const ack = app.ack(tenant, user, 1);
    const next = app.sync(tenant, user, 10);
    await assert.rejects(failed, /load failed/);
    assert.deepEqual(await ack, { generation: null, advanced: 0, cleared: 0, warning: null }, "no sync was recorded before it");
    assert.deepEqual((await next).messages.map((m) => `${m.channel.channelId}#${m.messageSeq}`), ["g1____cmd#1"]);
  });
});

describe("CmdSyncRecords", () => {
  it("keeps at most maxUsers users (the least recently synced goes first) and maxPerUser records a user", () => {
    const r = new CmdSyncRecords(() => 0, { maxUsers: 2, maxPerUser: 1 });
    const t = newUuid();
    const [a, b, c] = [newUuid(), newUuid(), newUuid()];
    const rec = (seq: number) => ({ channel: ch("g____cmd"), lastReturnedMsgSeq: seq, pending: false, pendingActiveAt: 0 });
    r.replace(t, a, [rec(1), rec(2)]);
    r.replace(t, b, [rec(1)]);
    r.replace(t, a, [rec(3)]);
    r.replace(t, c, [rec(1)]);
    assert.equal(r.peek(t, b), null);
    assert.deepEqual(r.peek(t, a)!.records.map((x) => x.lastReturnedMsgSeq), [3]);
    assert.equal(r.size(), 2);
  });
});
