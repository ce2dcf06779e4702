/**
 * The CMD sync and ack application (spec 001 cmdsync.App): sync merges the user's durable states
 * with the owner-local pending overlay, decides the candidate order and the global limit before
 * loading messages, and records per user what it returned (the latest generation only); ack
 * advances the durable read seqs of the latest record, creates rows for pending-only channels
 * (active at = the pending time, not the ack time) and only then clears the pending entries.
 *
 * One refinement over WuKongIM's code (which loads every candidate with the whole limit, sorts all
 * messages by timestamp and cuts the list, so that a channel may be answered seq 5 without seq 4
 * and the ack then skips 4): candidates are loaded in order, each with what is left of the limit,
 * so every channel's answer is a contiguous run from its read seq + 1 and the ack's read seq never
 * jumps a message. Loading stops once the limit (or CMD_SYNC_RECORD_MAX_PER_USER channels) is
 * reached: a channel not loaded stays unread for the next sync.
 */
import { CMD_SYNC_DEFAULT_LIMIT, CMD_SYNC_MAX_LIMIT, type Uuid } from "../base/index.js";
import { StaleOwnerError, type Fence } from "../cluster/index.js";
import { KeyedSerial } from "../support/index.js";
import { channelKeyText, isCommandChannel } from "./channel.js";
import { USER_SLOT_NOT_OURS } from "./errors.js";
import { CMD_STATE_READ_CHUNK } from "./state.js";
import { cmdMetrics } from "./metrics.js";
import type {
  CmdAckResult, CmdConversationState, CmdMessage, CmdMessageSource, CmdPendingBuffer, CmdReadPatch, CmdStateStore, CmdSyncRecord, CmdSyncResult,
  CmdSyncMode, CommandChannelKey, PendingConversationView,
} from "./types.js";

/** spec 001 defaults (WuKongIM records.go / app.go). */
export const CMD_SYNC_RECORD_TTL_MS = 5 * 60_000;
export const CMD_SYNC_RECORD_MAX_USERS = 4096;
export const CMD_SYNC_RECORD_MAX_PER_USER = 2048;
/**
 * How many unread durable rows and how many unread pending channels of a user a sync considers
 * (WuKongIM defaultActiveScanLimit). Unread ones only (issue 23, defect 5): WuKongIM's — and this
 * module's first — scan took the newest rows read or not, so a user's 2,001st channel was never
 * answered while 2,000 newer read ones filled the scan. A sync answers at most
 * CMD_SYNC_RECORD_MAX_PER_USER channels, an ack reads them, and the next scan reaches the next ones.
 */
export const CMD_SYNC_ACTIVE_SCAN_LIMIT = 2000;

/** A sync record with where its pending overlay came from (for the ack of a pending-only channel). */
export interface CmdSyncRecordEntry extends CmdSyncRecord {
  pending: boolean;
  pendingActiveAt: number;
  /**
   * The durable row's last seq was unknown (a row of the old code) and this answer reached the end
   * of the user's commands in the CMD log: the ack settles the row's last seq at lastReturnedMsgSeq.
   */
  settlesLastSeq?: boolean;
}

interface UserRecords {
  generation: number;
  at: number;
  records: CmdSyncRecordEntry[];
}

/**
 * The per-user records of the latest sync: kept CMD_SYNC_RECORD_TTL_MS, at most
 * CMD_SYNC_RECORD_MAX_USERS users (the least recently synced is forgotten first) and
 * CMD_SYNC_RECORD_MAX_PER_USER records a user. In memory on the user's owner: a lost record only
 * means the client's next sync answers the same messages again.
 */
export class CmdSyncRecords {
  private readonly byUser = new Map<string, UserRecords>();
  private generation = 0;
  readonly ttlMs: number;
  readonly maxUsers: number;
  readonly maxPerUser: number;

  constructor(private readonly now: () => number = Date.now, opts: { ttlMs?: number; maxUsers?: number; maxPerUser?: number } = {}) {
    this.ttlMs = opts.ttlMs ?? CMD_SYNC_RECORD_TTL_MS;
    this.maxUsers = opts.maxUsers ?? CMD_SYNC_RECORD_MAX_USERS;
    this.maxPerUser = opts.maxPerUser ?? CMD_SYNC_RECORD_MAX_PER_USER;
  }

  /** Records a sync's answer as the user's latest generation; returns the generation. */
  replace(tenant: Uuid, user: Uuid, records: readonly CmdSyncRecordEntry[]): number {
    const k = `${tenant}:${user}`;
    this.byUser.delete(k);
    const generation = ++this.generation;
    this.byUser.set(k, { generation, at: this.now(), records: records.slice(0, this.maxPerUser) });
    while (this.byUser.size > this.maxUsers) this.byUser.delete(this.byUser.keys().next().value!);
    return generation;
  }

  /** The latest generation of the user, null when none or expired. */
  peek(tenant: Uuid, user: Uuid): { generation: number; records: readonly CmdSyncRecordEntry[] } | null {
    const k = `${tenant}:${user}`;
    const r = this.byUser.get(k);
    if (!r) return null;
    if (this.now() - r.at > this.ttlMs) {
      this.byUser.delete(k);
      return null;
    }
    return { generation: r.generation, records: r.records };
  }

  /** Forgets the user's records if they are still that generation (a newer sync keeps its own). */
  deleteIfGeneration(tenant: Uuid, user: Uuid, generation: number): void {
    const k = `${tenant}:${user}`;
    if (this.byUser.get(k)?.generation === generation) this.byUser.delete(k);
  }

  size(): number {
    return this.byUser.size;
  }
}

export interface CmdSyncAppOptions {
  states: CmdStateStore;
  pending: CmdPendingBuffer;
  messages: CmdMessageSource;
  /** The fence of the user's slot, null when this node does not own it (→ StaleOwnerError). */
  fenceOf: (tenant: Uuid, user: Uuid) => Fence | null;
  /** Called when a sync or ack that got a fence is done (a gate's leave()). */
  releaseFence?: (tenant: Uuid, user: Uuid) => void;
  now?: () => number;
  recordTtlMs?: number;
  maxUsers?: number;
  maxRecordsPerUser?: number;
  defaultLimit?: number;
  maxLimit?: number;
  /** The records cache (default: a new one from the options above). */
  records?: CmdSyncRecords;
  log?: (line: string) => void;
}

interface Candidate {
  channel: CommandChannelKey;
  readSeq: number;
  /**
   * The last seq known to concern the user (durable row and pending entry, the max): a sync answers
   * nothing beyond it. A later message is answered once its intent arrives, and the intent carries
   * the sender's own read seq; loading past it would answer the sender's own command while its
   * owner's pending entry is lost and not yet rebuilt (a takeover before recovery, issue 23).
   */
  lastSeq: number;
  activeAt: number;
  pending: boolean;
  pendingActiveAt: number;
  /**
   * The durable row's last seq is unknown (written by the code before issue 23): the candidate is
   * loaded without a last-seq bound, and the sync settles the row once a load reaches the end of
   * the user's commands in the log (docs/cmd-sync-core.md, the upgrade).
   */
  unknownLast: boolean;
}

function compareCandidates(a: Candidate, b: Candidate): number {
  return b.activeAt - a.activeAt || a.channel.channelType - b.channel.channelType
    || (a.channel.channelId < b.channel.channelId ? -1 : a.channel.channelId > b.channel.channelId ? 1 : 0);
}

/** Durable states and pending views as sync candidates: read = max(read, deleted-to, pending read), last = max(durable last, pending last). */
export function mergeCandidates(states: readonly CmdConversationState[], pending: readonly PendingConversationView[]): Candidate[] {
  const byKey = new Map<string, Candidate>();
  for (const s of states) {
    byKey.set(channelKeyText(s.channel), {
      channel: s.channel, readSeq: Math.max(s.readSeq, s.deletedToSeq), lastSeq: s.lastMsgSeq ?? Number.MAX_SAFE_INTEGER, activeAt: s.activeAt,
      pending: false, pendingActiveAt: 0, unknownLast: s.lastMsgSeq === null,
    });
  }
  for (const v of pending) {
    const k = channelKeyText(v.channel);
    const c = byKey.get(k);
    if (c) {
      c.readSeq = Math.max(c.readSeq, v.readSeq);
      c.lastSeq = Math.max(c.lastSeq, v.lastMsgSeq);
      c.activeAt = Math.max(c.activeAt, v.activeAt);
      c.pending = true;
      c.pendingActiveAt = Math.max(c.pendingActiveAt, v.activeAt);
    } else {
      byKey.set(k, { channel: v.channel, readSeq: v.readSeq, lastSeq: v.lastMsgSeq, activeAt: v.activeAt, pending: true, pendingActiveAt: v.activeAt, unknownLast: false });
    }
  }
  return [...byKey.values()].sort(compareCandidates);
}

/** How many sync candidates are loaded at once (one round trip per wave; more only over-reads channels a full limit leaves unused). */
export const CMD_SYNC_LOAD_WAVE = 32;

export class CmdSyncApp {
  readonly records: CmdSyncRecords;
  private readonly now: () => number;
  private readonly defaultLimit: number;
  private readonly maxLimit: number;
  private readonly log: (line: string) => void;
  /**
   * The sync and ack operations of one user, one at a time (spec 001: an ack applies the latest
   * generation of the user's sync). Without it an ack that arrives while a sync is loading finds
   * the previous record (or none) and applies it, and a sync that read the durable rows before an
   * ack's write answers what that ack just acknowledged: whatever surface (HTTP, gRPC, node RPC)
   * or connection the calls came by, each one sees every earlier one done.
   */
  private readonly perUser = new KeyedSerial();

  constructor(private readonly o: CmdSyncAppOptions) {
    this.now = o.now ?? Date.now;
    this.maxLimit = o.maxLimit ?? CMD_SYNC_MAX_LIMIT;
    this.defaultLimit = Math.min(o.defaultLimit ?? CMD_SYNC_DEFAULT_LIMIT, this.maxLimit);
    this.records = o.records ?? new CmdSyncRecords(this.now, { ttlMs: o.recordTtlMs, maxUsers: o.maxUsers, maxPerUser: o.maxRecordsPerUser });
    this.log = o.log ?? ((line) => process.stderr.write(`cmd-sync: ${line}\n`));
  }

  /** ≤ 0 or not an integer: the default; above the maximum: the maximum. */
  normaliseLimit(limit: number): number {
    if (!Number.isSafeInteger(limit) || limit <= 0) return this.defaultLimit;
    return Math.min(limit, this.maxLimit);
  }

  private fence(tenant: Uuid, user: Uuid): Fence {
    const f = this.o.fenceOf(tenant, user);
    if (f === null) throw new StaleOwnerError(USER_SLOT_NOT_OURS, { tenant, user });
    return f;
  }

  /**
   * The user's unread CMD messages, at most `limit` (normaliseLimit) over all channels, each
   * channel's run ascending from its effective read seq + 1; messages are ordered by time (a
   * channel's own order is kept). Their channel id keeps its suffix, as CmdMessage says: the legacy
   * surface (HTTP /message/sync) strips exactly one (stripCommandSuffix: `g1____cmd` → `g1`,
   * `nested____cmd____cmd` → `nested____cmd`). Records what it answered as the user's latest
   * generation — unless `mode` is "peek" (an operator's look, issue 24): the same answer, and the
   * user's latest generation stays what it was, so the application's next ack still applies the
   * sync that application was answered (generation null).
   */
  async sync(tenant: Uuid, user: Uuid, limit: number, mode: CmdSyncMode = "record"): Promise<CmdSyncResult> {
    return this.fenced(tenant, user, (fence) => this.syncOwned(tenant, user, limit, fence, mode), "syncs");
  }

  /**
   * Runs `body` holding the user's fence (StaleOwnerError without one), releasing it after, once
   * the user's earlier operations are done: the fence is taken when the turn comes, so a queued
   * call holds no gate and sees a slot that moved meanwhile.
   */
  private fenced<T>(tenant: Uuid, user: Uuid, body: (fence: Fence) => Promise<T>, counter: "syncs" | "acks"): Promise<T> {
    return this.perUser.run(`${tenant}:${user}`, () => this.fencedNow(tenant, user, body, counter));
  }

  private async fencedNow<T>(tenant: Uuid, user: Uuid, body: (fence: Fence) => Promise<T>, counter: "syncs" | "acks"): Promise<T> {
    let fence: Fence;
    try {
      fence = this.fence(tenant, user);
    } catch (err) {
      cmdMetrics[counter].inc({ outcome: "error" });
      throw err;
    }
    try {
      return await body(fence);
    } finally {
      this.o.releaseFence?.(tenant, user);
    }
  }

  private async syncOwned(tenant: Uuid, user: Uuid, limit: number, fence: Fence, mode: CmdSyncMode): Promise<CmdSyncResult> {
    try {
      const lim = this.normaliseLimit(limit);
      await this.o.states.indexLegacyRows?.(tenant, user, fence);
      // A pass that answers nothing but settled rows of the old code scans again: its scan may have
      // been full of such rows with nothing to load, and an empty answer ends the client's loop.
      // Each pass takes the rows it settled out of the unread scan, so this ends.
      let pass = await this.syncPass(tenant, user, lim, fence);
      while (pass.messages.length === 0 && pass.settled > 0) pass = await this.syncPass(tenant, user, lim, fence);
      const { messages, records } = pass;
      const generation = mode === "record" ? this.records.replace(tenant, user, records) : null;
      cmdMetrics.syncs.inc({ outcome: "ok" });
      cmdMetrics.syncMessages.inc(messages.length);
      return { messages, generation };
    } catch (err) {
      cmdMetrics.syncs.inc({ outcome: "error" });
      throw err;
    }
  }

  /** One scan of the candidates and their loads; rows of the old code found with nothing to load are settled. */
  private async syncPass(tenant: Uuid, user: Uuid, lim: number, fence: Fence): Promise<{ messages: CmdMessage[]; records: CmdSyncRecordEntry[]; settled: number }> {
    const candidates = await this.candidates(tenant, user);
    let remaining = lim;
    const records: CmdSyncRecordEntry[] = [];
    // rows of the old code whose load found nothing beyond their read seq: settled after the loop
    const settled: CmdReadPatch[] = [];
    const picked: { msg: CmdMessage; at: number; channel: CommandChannelKey }[] = [];
    // Candidates are loaded a wave at a time, concurrently, each with what was left of the limit
    // when the wave began, then taken in order with what is left at each: the same answer as
    // loading one after another (each channel's first `left` messages are a prefix of what was
    // loaded), in one round trip per wave instead of one per channel (200 channels: 12× → see
    // bench/cmd).
    let waveStart = 0;
    let wave: CmdMessage[][] = [];
    let waveLimit = 0;
    for (let i = 0; i < candidates.length; i++) {
      const c = candidates[i]!;
      if (remaining <= 0 || records.length >= this.records.maxPerUser) break;
      if (i === waveStart + wave.length) {
        waveStart = i;
        const next = candidates.slice(i, i + CMD_SYNC_LOAD_WAVE);
        const limitNow = remaining;
        waveLimit = limitNow;
        wave = await Promise.all(next.map((n) => this.o.messages.load(tenant, n.channel, n.readSeq, limitNow, user)));
      }
      const loaded = wave[i - waveStart]!;
      const msgs = loaded.filter((m) => m.messageSeq > c.readSeq && m.messageSeq <= c.lastSeq).slice(0, remaining);
      // a load asked for `waveLimit` and given fewer reached the end of the user's commands in the
      // channel; a row of unknown last seq settles there, if this answer holds all it loaded
      const reachedEnd = c.unknownLast && loaded.length < waveLimit && msgs.length === loaded.length;
      if (msgs.length === 0) {
        if (reachedEnd) settled.push({ tenant, user, channel: c.channel, readSeq: 0, lastMsgSeq: c.readSeq });
        continue;
      }
      let at = 0;
      let last = 0;
      for (const m of msgs) {
        at = Math.max(at, m.timestampMs);
        last = Math.max(last, m.messageSeq);
        picked.push({ msg: m, at, channel: c.channel });
      }
      records.push({ channel: c.channel, lastReturnedMsgSeq: last, pending: c.pending, pendingActiveAt: c.pendingActiveAt, ...(reachedEnd ? { settlesLastSeq: true } : {}) });
      remaining -= msgs.length;
    }
    picked.sort((a, b) => a.at - b.at || a.channel.channelType - b.channel.channelType
      || (a.channel.channelId < b.channel.channelId ? -1 : a.channel.channelId > b.channel.channelId ? 1 : 0)
      || a.msg.messageSeq - b.msg.messageSeq);
    const messages = picked.map(({ msg }) => msg);
    // read seq 0 never moves a read; the last seq is what this sync knows of the row now: its read
    for (let j = 0; j < settled.length; j += CMD_STATE_READ_CHUNK) await this.o.states.advanceReadSeqs(settled.slice(j, j + CMD_STATE_READ_CHUNK), fence, this.now());
    return { messages, records, settled: settled.length };
  }

  /**
   * The user's unread durable rows and unread pending channels (each at most
   * CMD_SYNC_ACTIVE_SCAN_LIMIT), each overlaid with the other side of the same channel: a durable
   * row's pending view (the sender's own read seq, a newer active time), a pending channel's durable
   * row (a read seq acked since the intent) — whatever their place in the other side's order.
   */
  private async candidates(tenant: Uuid, user: Uuid): Promise<Candidate[]> {
    const states = await this.o.states.listUnread(tenant, user, CMD_SYNC_ACTIVE_SCAN_LIMIT);
    const views = this.o.pending.listPending(tenant, user, CMD_SYNC_ACTIVE_SCAN_LIMIT, true);
    const stateKeys = new Set(states.map((st) => channelKeyText(st.channel)));
    const viewKeys = new Set(views.map((v) => channelKeyText(v.channel)));
    const more = await this.o.states.getMany(tenant, user, views.filter((v) => !stateKeys.has(channelKeyText(v.channel))).map((v) => v.channel));
    for (const st of states) {
      if (viewKeys.has(channelKeyText(st.channel))) continue;
      const v = this.o.pending.pendingView(tenant, user, st.channel);
      if (v) views.push(v);
    }
    // a channel whose overlay reads it up to its last seq (the sender's own pending read) has nothing to load
    return mergeCandidates([...states, ...more], views).filter((c) => c.lastSeq > c.readSeq);
  }

  /**
   * Applies the user's latest sync record (lastMessageSeq is accepted for compatibility and neither
   * selects nor bounds anything — spec 001: the ack uses the latest sync generation, never
   * last_message_seq; the result names the generation applied, null when there was none): advances the durable read seqs, upserts rows for pending-backed channels
   * (pending time as active at), then clears those pending entries (best effort: a failure is the
   * warning of a successful ack). A failed durable write rejects and keeps the record.
   */
  async ack(tenant: Uuid, user: Uuid, lastMessageSeq: number): Promise<CmdAckResult> {
    void lastMessageSeq;
    return this.fenced(tenant, user, (fence) => this.ackOwned(tenant, user, fence), "acks");
  }

  private async ackOwned(tenant: Uuid, user: Uuid, fence: Fence): Promise<CmdAckResult> {
    try {
      const latest = this.records.peek(tenant, user);
      const empty: CmdAckResult = { generation: latest?.generation ?? null, advanced: 0, cleared: 0, warning: null };
      if (!latest) {
        cmdMetrics.acks.inc({ outcome: "empty" });
        return empty;
      }
      const valid = latest.records.filter((r) => r.lastReturnedMsgSeq > 0 && isCommandChannel(r.channel.channelId));
      if (valid.length === 0) {
        this.records.deleteIfGeneration(tenant, user, latest.generation);
        cmdMetrics.acks.inc({ outcome: "empty" });
        return empty;
      }
      const updatedAt = this.now();
      const patches: CmdReadPatch[] = valid.map((r) => ({
        tenant, user, channel: r.channel, readSeq: r.lastReturnedMsgSeq, ...(r.settlesLastSeq ? { lastMsgSeq: r.lastReturnedMsgSeq } : {}),
      }));
      await this.o.states.advanceReadSeqs(patches, fence, updatedAt);

      // each record's own pending view (not the newest N of the user's: a record may be past them)
      const backed: { record: CmdSyncRecordEntry; activeAt: number; lastMsgSeq: number }[] = [];
      for (const r of valid) {
        const view = this.o.pending.pendingView(tenant, user, r.channel);
        const lastMsgSeq = Math.max(r.lastReturnedMsgSeq, view?.lastMsgSeq ?? 0);
        if (r.pending) backed.push({ record: r, activeAt: Math.max(r.pendingActiveAt, view?.activeAt ?? 0), lastMsgSeq });
        else if (view) backed.push({ record: r, activeAt: view.activeAt, lastMsgSeq });
      }
      if (backed.length > 0) {
        await this.o.states.upsertStates(backed.map(({ record, activeAt, lastMsgSeq }) => ({
          tenant, user, channel: record.channel, readSeq: record.lastReturnedMsgSeq, deletedToSeq: 0, activeAt, updatedAt, lastMsgSeq,
        })), fence);
      }
      let cleared = 0;
      const failures: string[] = [];
      for (const { record } of backed) {
        try {
          this.o.pending.markSynced(tenant, user, record.channel, record.lastReturnedMsgSeq);
          cleared++;
        } catch (err) {
          failures.push(`${channelKeyText(record.channel)}: ${(err as Error).message}`);
        }
      }
      this.records.deleteIfGeneration(tenant, user, latest.generation);
      const warning = failures.length > 0 ? `read progress is durable; clearing the pending entries failed (${failures.join("; ")})` : null;
      if (warning) this.log(`ack of ${user}: ${warning}`);
      cmdMetrics.acks.inc({ outcome: warning ? "warning" : "ok" });
      return { generation: latest.generation, advanced: valid.length, cleared, warning };
    } catch (err) {
      cmdMetrics.acks.inc({ outcome: "error" });
      throw err;
    }
  }
}
