/**
 * The owner-local pending buffer (spec 001 ConversationUpdater): intents of the users whose slot
 * this node owns, coalesced per (channel, user) by monotonic max merges, listed per user for the
 * sync overlay, cleared by the ack, flushed to the durable state every CMD_FLUSH_INTERVAL_MS in
 * batches of one slot (all or nothing each; a slot's batches in order, as many slots at once as the
 * store's flushConcurrency), saved to a file on stop and restored on start.
 *
 * Sharded like WuKongIM's (FNV-32a of the channel id and the type byte, CMD_PENDING_SHARD_COUNT):
 * each shard holds the channel updates and a per-user index of them, so a user's pending
 * channels are found without scanning the buffer. The queue is bounded (CMD_MAX_PENDING entries):
 * when full, an intent is dropped and counted, never waited for — the owners' catch-up scan
 * re-derives it.
 */
import { existsSync } from "node:fs";
import type { Uuid } from "../base/index.js";
import type { Fence } from "../cluster/index.js";
import { validateIntent } from "./intent.js";
import { badPendingFileProbes, cmdMetrics } from "./metrics.js";
import { loadPendingFile, savePendingFile, type PendingFileUpdate } from "./pending-file.js";
import type { CommandChannelKey } from "../cmd-log/index.js";
import type { CmdBadPendingFile, CmdConversationState, CmdFlushReport, CmdPendingBuffer, CmdStateStore, ConversationIntent, PendingConversationView } from "./types.js";

/** spec 001 defaults (WuKongIM defaultPendingFlushInterval / Batch / ShardCount). */
export const CMD_FLUSH_INTERVAL_MS = 1000;
export const CMD_FLUSH_BATCH_SIZE = 500;
export const CMD_PENDING_SHARD_COUNT = 16;
/** The bound of the buffer, in (user, channel) entries (≈ 200 B each: ~20 MB at the bound). */
export const CMD_MAX_PENDING = 100_000;
/**
 * How long the buffer remembers an entry it settled (written durably by a flush, or cleared by an
 * ack after the ack's durable write): an intent no newer than what was settled makes no new entry
 * in that time. The owners' catch-up scan pushes every commit's intent again up to an interval
 * (CMD_CATCHUP_INTERVAL_MS, 1 s) after the live path did, and from CMD_SCAN_OVERLAP_MS (5 s) before
 * its cursor after a start: without this, a message acknowledged in between came back as a pending
 * entry with read seq 0 (shown by `cmd pending`, and written to the durable state once more by
 * the next flush — a no-op max merge, and on Cassandra a conditional batch).
 */
export const CMD_SETTLED_MEMORY_MS = 10_000;

export interface CmdPendingOptions {
  store: CmdStateStore;
  /** null: no file (tests, benches). */
  dataDir: string | null;
  slotOf: (tenant: Uuid, user: Uuid) => number;
  /** null: the slot is not ours any more → its entries are dropped, not flushed. */
  fenceOf: (slot: number) => Fence | null;
  /** Called once the slot's batches of a flush are done, after a non-null fenceOf (a gate's leave()). */
  releaseFence?: (slot: number) => void;
  /** CMD_FLUSH_INTERVAL_MS; 0: no ticker (the caller flushes). */
  flushIntervalMs?: number;
  flushBatchSize?: number;
  /** Slots whose batches a flush writes at once; default the store's flushConcurrency, else 1 (one after another). */
  flushConcurrency?: number;
  shardCount?: number;
  maxPending?: number;
  now?: () => number;
  /** The clock of the settled memory (CMD_SETTLED_MEMORY_MS), in ms; default performance.now. */
  settledClock?: () => number;
  log?: (line: string) => void;
}

/** FNV-32a of bytes. */
export function fnv32a(bytes: Uint8Array): number {
  let h = 0x811c9dc5;
  for (const b of bytes) {
    h ^= b;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

/** The shard of a channel: FNV-32a(channel id bytes ‖ type byte) mod shardCount. */
export function pendingShardOf(channel: CommandChannelKey, shardCount: number): number {
  const id = Buffer.from(channel.channelId, "utf8");
  const bytes = new Uint8Array(id.length + 1);
  bytes.set(id, 0);
  bytes[id.length] = channel.channelType & 0xff;
  return fnv32a(bytes) % shardCount;
}

interface Entry {
  tenant: Uuid;
  user: Uuid;
  channel: CommandChannelKey;
  slot: number;
  readSeq: number;
  lastSeq: number;
  activeAt: number;
}

interface ChannelUpdate {
  tenant: Uuid;
  channel: CommandChannelKey;
  lastSeq: number;
  activeAt: number;
  users: Map<Uuid, Entry>;
}

interface Shard {
  byChannel: Map<string, ChannelUpdate>;
  /** `tenant:user` → channel keys of byChannel naming the user. */
  byUser: Map<string, Set<string>>;
}

/** What an entry held when the buffer settled it (and when). */
interface Settled {
  readSeq: number;
  lastSeq: number;
  activeAt: number;
  at: number;
}

interface Snap {
  entry: Entry;
  readSeq: number;
  lastSeq: number;
  activeAt: number;
}

const chanKeyOf = (tenant: Uuid, c: CommandChannelKey) => `${tenant}|${c.channelType}|${c.channelId}`;
const userKeyOf = (tenant: Uuid, user: Uuid) => `${tenant}:${user}`;

function cmpEntries(a: Entry, b: Entry): number {
  return a.activeAt - b.activeAt || a.channel.channelType - b.channel.channelType
    || (a.channel.channelId < b.channel.channelId ? -1 : a.channel.channelId > b.channel.channelId ? 1 : 0)
    || (a.tenant < b.tenant ? -1 : a.tenant > b.tenant ? 1 : 0)
    || (a.user < b.user ? -1 : a.user > b.user ? 1 : 0);
}

/** (activeAt DESC, type, id): the order of sync candidates and of listPending. */
export function compareViews(a: PendingConversationView, b: PendingConversationView): number {
  return b.activeAt - a.activeAt || a.channel.channelType - b.channel.channelType
    || (a.channel.channelId < b.channel.channelId ? -1 : a.channel.channelId > b.channel.channelId ? 1 : 0);
}

export class CmdPendingUpdater implements CmdPendingBuffer {
  private readonly shards: Shard[];
  private readonly bySlot = new Map<number, Set<Entry>>();
  /** `tenant|type|id` + user → what was settled, oldest first (bounded by maxPending and CMD_SETTLED_MEMORY_MS). */
  private readonly settled = new Map<string, Settled>();
  private entries = 0;
  private readonly flushIntervalMs: number;
  private readonly batchSize: number;
  private readonly concurrency: number;
  private readonly maxPending: number;
  private readonly now: () => number;
  private readonly settledClock: () => number;
  private readonly log: (line: string) => void;
  private ticker: NodeJS.Timeout | null = null;
  private flushing: Promise<unknown> = Promise.resolve();
  private inFlight = false;
  /** A file was restored: it stays until a later flush or save succeeds. */
  private restoredDirty = false;
  private bad: CmdBadPendingFile | null = null;
  private readonly badProbe = () => this.bad !== null && existsSync(this.bad.path);

  constructor(private readonly opts: CmdPendingOptions) {
    this.flushIntervalMs = opts.flushIntervalMs ?? CMD_FLUSH_INTERVAL_MS;
    this.batchSize = Math.max(1, opts.flushBatchSize ?? CMD_FLUSH_BATCH_SIZE);
    this.concurrency = Math.max(1, Math.floor(opts.flushConcurrency ?? opts.store.flushConcurrency ?? 1));
    this.maxPending = opts.maxPending ?? CMD_MAX_PENDING;
    this.now = opts.now ?? Date.now;
    this.settledClock = opts.settledClock ?? (() => performance.now());
    this.log = opts.log ?? ((line) => process.stderr.write(`cmd-sync: ${line}\n`));
    const n = Math.max(1, opts.shardCount ?? CMD_PENDING_SHARD_COUNT);
    this.shards = Array.from({ length: n }, () => ({ byChannel: new Map(), byUser: new Map() }));
  }

  /** The pending file renamed `.bad` at start, null when none. */
  get badFile(): string | null {
    return this.bad?.path ?? null;
  }

  /** The `.bad` file set aside at start and when, while it is still on disk (null once the operator deleted it). */
  badPendingFile(): CmdBadPendingFile | null {
    return this.badProbe() ? this.bad : null;
  }

  /** Loads the file (before the flush loop), then starts the ticker. */
  async start(): Promise<void> {
    if (this.opts.dataDir !== null) await this.load(this.opts.dataDir);
    if (this.flushIntervalMs > 0 && this.ticker === null) {
      this.ticker = setInterval(() => {
        if (this.inFlight) return;
        this.flush().catch((err: Error) => this.log(`pending flush failed (entries stay, retried next tick): ${err.message}`));
      }, this.flushIntervalMs);
      this.ticker.unref();
    }
  }

  /** Stops the ticker, runs one last bounded flush, saves what is left (.tmp + close + rename). */
  async stop(): Promise<void> {
    badPendingFileProbes.delete(this.badProbe);
    if (this.ticker) clearInterval(this.ticker);
    this.ticker = null;
    try {
      await this.flush();
    } catch (err) {
      this.log(`final pending flush failed (${this.entries} entries saved to the file): ${(err as Error).message}`);
    }
    if (this.opts.dataDir !== null) {
      try {
        const what = await savePendingFile(this.opts.dataDir, this.snapshotFile());
        cmdMetrics.pendingFile.inc({ event: what });
        this.restoredDirty = false;
      } catch (err) {
        cmdMetrics.pendingFile.inc({ event: "save_failed" });
        this.log(`saving the pending file failed: ${(err as Error).message}`);
      }
    }
  }

  size(): number {
    return this.entries;
  }

  pushIntent(intent: ConversationIntent): boolean {
    const users = new Map<Uuid, number>();
    for (const [u, r] of intent.userReadSeqs) if (typeof u === "string" && u.trim() !== "") users.set(u, Math.max(r, users.get(u) ?? 0));
    const clean: ConversationIntent = { ...intent, userReadSeqs: users };
    validateIntent(clean);
    const shard = this.shardOf(clean.channel);
    const ck = chanKeyOf(clean.tenant, clean.channel);
    const update = shard.byChannel.get(ck);
    let fresh = 0;
    for (const u of users.keys()) if (!update?.users.has(u)) fresh++;
    if (this.entries + fresh > this.maxPending) {
      cmdMetrics.intents.inc({ outcome: "dropped" });
      cmdMetrics.pendingDropped.inc({ reason: "full" }, users.size);
      return false;
    }
    for (const [user, read] of users) this.merge(shard, ck, clean.tenant, clean.channel, user, read, clean.messageSeq, clean.activeAt);
    cmdMetrics.intents.inc({ outcome: "accepted" });
    cmdMetrics.pendingEntries.set(this.entries);
    return true;
  }

  private merge(shard: Shard, ck: string, tenant: Uuid, channel: CommandChannelKey, user: Uuid, read: number, seq: number, activeAt: number): void {
    let update = shard.byChannel.get(ck);
    const e = update?.users.get(user);
    if (!e && this.isSettled(`${ck}|${user}`, read, seq, activeAt)) {
      cmdMetrics.pendingReplaysSkipped.inc();
      return;
    }
    if (!update) {
      update = { tenant, channel: { channelId: channel.channelId, channelType: channel.channelType }, lastSeq: seq, activeAt, users: new Map() };
      shard.byChannel.set(ck, update);
    } else {
      update.lastSeq = Math.max(update.lastSeq, seq);
      update.activeAt = Math.max(update.activeAt, activeAt);
    }
    if (e) {
      e.readSeq = Math.max(e.readSeq, read);
      e.lastSeq = Math.max(e.lastSeq, seq);
      e.activeAt = Math.max(e.activeAt, activeAt);
      return;
    }
    const entry: Entry = { tenant, user, channel: update.channel, slot: this.opts.slotOf(tenant, user), readSeq: read, lastSeq: seq, activeAt };
    update.users.set(user, entry);
    const uk = userKeyOf(tenant, user);
    let set = shard.byUser.get(uk);
    if (!set) shard.byUser.set(uk, (set = new Set()));
    set.add(ck);
    let slotSet = this.bySlot.get(entry.slot);
    if (!slotSet) this.bySlot.set(entry.slot, (slotSet = new Set()));
    slotSet.add(entry);
    this.entries++;
  }

  /** The values were settled (durably written) no longer than CMD_SETTLED_MEMORY_MS ago: pushing them again changes nothing. */
  private isSettled(key: string, read: number, seq: number, activeAt: number): boolean {
    const done = this.settled.get(key);
    return done !== undefined && read <= done.readSeq && seq <= done.lastSeq && activeAt <= done.activeAt && this.settledClock() - done.at < CMD_SETTLED_MEMORY_MS;
  }

  private remove(entry: Entry): void {
    const shard = this.shardOf(entry.channel);
    const ck = chanKeyOf(entry.tenant, entry.channel);
    const update = shard.byChannel.get(ck);
    if (!update || update.users.get(entry.user) !== entry) return;
    update.users.delete(entry.user);
    if (update.users.size === 0) shard.byChannel.delete(ck);
    const uk = userKeyOf(entry.tenant, entry.user);
    const set = shard.byUser.get(uk);
    if (set) {
      set.delete(ck);
      if (set.size === 0) shard.byUser.delete(uk);
    }
    const slotSet = this.bySlot.get(entry.slot);
    if (slotSet) {
      slotSet.delete(entry);
      if (slotSet.size === 0) this.bySlot.delete(entry.slot);
    }
    this.entries--;
    cmdMetrics.pendingEntries.set(this.entries);
  }

  private shardOf(channel: CommandChannelKey): Shard {
    return this.shards[pendingShardOf(channel, this.shards.length)]!;
  }

  private find(tenant: Uuid, user: Uuid, channel: CommandChannelKey): Entry | undefined {
    return this.shardOf(channel).byChannel.get(chanKeyOf(tenant, channel))?.users.get(user);
  }

  /**
   * The user's pending channels in (activeAt DESC, type, id) order, at most limit (≤ 0: all); with
   * unreadOnly, only those whose last seq is beyond the read seq (a sync's candidates: the sender's
   * own entries never crowd an unread one out of the limit).
   */
  listPending(tenant: Uuid, user: Uuid, limit: number, unreadOnly = false): PendingConversationView[] {
    const uk = userKeyOf(tenant, user);
    const views: PendingConversationView[] = [];
    for (const shard of this.shards) {
      const keys = shard.byUser.get(uk);
      if (!keys) continue;
      for (const ck of keys) {
        const e = shard.byChannel.get(ck)?.users.get(user);
        if (!e || (unreadOnly && e.lastSeq <= e.readSeq)) continue;
        views.push({ channel: { channelId: e.channel.channelId, channelType: e.channel.channelType }, lastMsgSeq: e.lastSeq, activeAt: e.activeAt, readSeq: e.readSeq });
      }
    }
    views.sort(compareViews);
    return limit > 0 && views.length > limit ? views.slice(0, limit) : views;
  }

  pendingView(tenant: Uuid, user: Uuid, channel: CommandChannelKey): PendingConversationView | null {
    const e = this.find(tenant, user, channel);
    return e ? { channel: { channelId: e.channel.channelId, channelType: e.channel.channelType }, lastMsgSeq: e.lastSeq, activeAt: e.activeAt, readSeq: e.readSeq } : null;
  }

  /**
   * Removes the user from the channel's pending update when throughSeq ≥ the user's last seq there
   * (the ack wrote read seq throughSeq durably first).
   */
  markSynced(tenant: Uuid, user: Uuid, channel: CommandChannelKey, throughSeq: number): void {
    const e = this.find(tenant, user, channel);
    if (e && throughSeq >= e.lastSeq) this.settle(e, Math.max(e.readSeq, throughSeq));
  }

  /** Removes an entry whose values the durable state holds now, and remembers them (CMD_SETTLED_MEMORY_MS). */
  private settle(e: Entry, readSeq: number): void {
    this.remove(e);
    const key = `${chanKeyOf(e.tenant, e.channel)}|${e.user}`;
    const now = this.settledClock();
    this.settled.delete(key);
    this.settled.set(key, { readSeq, lastSeq: e.lastSeq, activeAt: e.activeAt, at: now });
    for (const [k, v] of this.settled) {
      if (this.settled.size <= this.maxPending && now - v.at < CMD_SETTLED_MEMORY_MS) break;
      this.settled.delete(k);
    }
  }

  /** Lease lost: forgets the slot's entries (the successor re-derives them from its scan). */
  dropSlot(slot: number): void {
    const set = this.bySlot.get(slot);
    if (!set) return;
    const n = set.size;
    for (const e of [...set]) this.remove(e);
    cmdMetrics.pendingDropped.inc({ reason: "slot_lost" }, n);
  }

  /** The smallest active time of the slot's unflushed entries, null when it has none. */
  oldestPendingAt(slot: number): number | null {
    const set = this.bySlot.get(slot);
    if (!set || set.size === 0) return null;
    let min = Infinity;
    for (const e of set) if (e.activeAt < min) min = e.activeAt;
    return min;
  }

  /** One bounded flush (flushes are serialised); rejects with the first failed batch's error. */
  flush(): Promise<CmdFlushReport> {
    const run = this.flushing.then(() => this.flushOnce());
    this.flushing = run.catch(() => {});
    return run;
  }

  private async flushOnce(): Promise<CmdFlushReport> {
    this.inFlight = true;
    try {
      return await this.flushEntries();
    } finally {
      this.inFlight = false;
    }
  }

  private async flushEntries(): Promise<CmdFlushReport> {
    const all: Entry[] = [];
    for (const set of this.bySlot.values()) for (const e of set) all.push(e);
    all.sort(cmpEntries);
    const bySlot = new Map<number, Snap[]>();
    for (const e of all) {
      let list = bySlot.get(e.slot);
      if (!list) bySlot.set(e.slot, (list = []));
      list.push({ entry: e, readSeq: e.readSeq, lastSeq: e.lastSeq, activeAt: e.activeAt });
    }
    const report: CmdFlushReport = { rows: 0, batches: 0, failedBatches: 0 };
    let firstError: unknown = null;
    // slots at once: each slot's batches stay in order (and inside its fence), the slots are independent
    const slots = [...bySlot];
    const limit = Math.max(1, Math.min(this.concurrency, slots.length));
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < slots.length) {
        const [slot, snaps] = slots[next++]!;
        const fence = this.opts.fenceOf(slot);
        if (fence === null) {
          this.dropSlot(slot);
          continue;
        }
        try {
          await this.flushSlot(snaps, fence, report, (err) => { firstError ??= err; });
        } catch (err) {
          firstError ??= err;
        } finally {
          this.opts.releaseFence?.(slot);
        }
      }
    };
    await Promise.all(Array.from({ length: limit }, worker));
    if (firstError !== null) {
      cmdMetrics.flushes.inc({ outcome: "failed" });
      throw firstError;
    }
    cmdMetrics.flushes.inc({ outcome: "ok" });
    if (this.restoredDirty && this.opts.dataDir !== null) {
      try {
        const what = await savePendingFile(this.opts.dataDir, this.snapshotFile());
        cmdMetrics.pendingFile.inc({ event: what });
        this.restoredDirty = this.entries > 0;
      } catch (err) {
        cmdMetrics.pendingFile.inc({ event: "save_failed" });
        this.log(`rewriting the restored pending file failed (kept as it was): ${(err as Error).message}`);
      }
    }
    return report;
  }

  /** The slot's batches, in order; a failed batch stays pending (its error goes to onError). */
  private async flushSlot(snaps: Snap[], fence: Fence, report: CmdFlushReport, onError: (err: unknown) => void): Promise<void> {
    {
      for (let i = 0; i < snaps.length; i += this.batchSize) {
        const batch = snaps.slice(i, i + this.batchSize);
        const updatedAt = this.now();
        const states: CmdConversationState[] = batch.map((s) => ({
          tenant: s.entry.tenant, user: s.entry.user, channel: s.entry.channel,
          readSeq: s.readSeq, deletedToSeq: 0, activeAt: s.activeAt, updatedAt, lastMsgSeq: s.lastSeq,
        }));
        report.batches++;
        try {
          await this.opts.store.upsertStates(states, fence);
        } catch (err) {
          report.failedBatches++;
          cmdMetrics.flushFailures.inc();
          onError(err);
          continue;
        }
        report.rows += batch.length;
        cmdMetrics.flushedRows.inc(batch.length);
        for (const s of batch) {
          const e = s.entry;
          if (e.readSeq <= s.readSeq && e.lastSeq <= s.lastSeq && e.activeAt <= s.activeAt) this.settle(e, e.readSeq);
        }
      }
    }
  }

  private snapshotFile(): PendingFileUpdate[] {
    const out: PendingFileUpdate[] = [];
    for (const shard of this.shards) {
      for (const u of shard.byChannel.values()) {
        const users = [...u.users.values()].sort((a, b) => (a.user < b.user ? -1 : 1));
        if (users.length === 0) continue;
        out.push({
          tenant: u.tenant, command_channel_id: u.channel.channelId, channel_type: u.channel.channelType,
          last_msg_seq: Math.max(...users.map((e) => e.lastSeq)), active_at: Math.max(...users.map((e) => e.activeAt)),
          user_read_seqs: Object.fromEntries(users.map((e) => [e.user, e.readSeq])),
          user_last_msg_seqs: Object.fromEntries(users.map((e) => [e.user, e.lastSeq])),
          user_active_ats: Object.fromEntries(users.map((e) => [e.user, e.activeAt])),
        });
      }
    }
    return out.sort((a, b) => (a.tenant + "|" + String(a.channel_type).padStart(3, "0") + "|" + a.command_channel_id < b.tenant + "|" + String(b.channel_type).padStart(3, "0") + "|" + b.command_channel_id ? -1 : 1));
  }

  private async load(dataDir: string): Promise<void> {
    const res = await loadPendingFile(dataDir);
    if (res.kind === "none") return;
    if (res.kind === "empty") {
      cmdMetrics.pendingFile.inc({ event: "removed" });
      this.log("the pending file was empty; removed");
      return;
    }
    if (res.kind === "bad") {
      this.bad = { path: res.badFile, setAsideAtMs: this.now() };
      badPendingFileProbes.add(this.badProbe);
      cmdMetrics.pendingFile.inc({ event: "bad" });
      this.log(`the pending file is undecodable (${res.reason}); renamed to ${res.badFile}, starting without it`);
      return;
    }
    let restored = 0;
    let dropped = 0;
    for (const u of res.updates) {
      const channel = { channelId: u.command_channel_id, channelType: u.channel_type };
      const shard = this.shardOf(channel);
      const ck = chanKeyOf(u.tenant, channel);
      for (const [user, read] of Object.entries(u.user_read_seqs)) {
        const uid = user as Uuid;
        if (this.entries >= this.maxPending && !shard.byChannel.get(ck)?.users.has(uid)) {
          dropped++;
          continue;
        }
        this.merge(shard, ck, u.tenant, channel, uid, read, u.user_last_msg_seqs[user] ?? u.last_msg_seq, u.user_active_ats[user] ?? u.active_at);
        restored++;
      }
    }
    if (dropped > 0) cmdMetrics.pendingDropped.inc({ reason: "full" }, dropped);
    cmdMetrics.pendingEntries.set(this.entries);
    cmdMetrics.pendingFile.inc({ event: "loaded" });
    this.restoredDirty = true;
    this.log(`restored ${restored} pending CMD entries from the pending file${dropped ? ` (${dropped} dropped: buffer full)` : ""}`);
  }
}
