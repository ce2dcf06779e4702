import { uuidToHex, type KeySpace, type Uuid } from "../base/index.js";
import { decodeMembershipPayload, MEMBERSHIP_CUSTOM_TYPE } from "../conversation/index.js";
import { SOLO_GATE, type UnitGate } from "../cluster/index.js";
import type { DispatchLog, DispatchRecord, LogPosition } from "../dispatch/index.js";
import type { RedisStore } from "../store/index.js";
import { listCheckpointKey } from "./keys.js";
import { metrics } from "./metrics.js";
import type { InHandEntry } from "./row.js";
import { advanceListCheckpointScript } from "./scripts.js";
import type { ConversationListService, PendingRow } from "./service.js";

/** projection_compaction_window (spec 002 §2.1, §8): a row is written at most once per window. */
export const PROJECTION_COMPACTION_WINDOW_MS = 5000;

/** Rows held in memory at most before the window is flushed early (bounds the consumer's memory). */
export const MAX_PENDING_ROWS = 100_000;

export interface CompactorOptions {
  /** projection_compaction_window. */
  windowMs?: number;
  maxPendingRows?: number;
  /** Records read per partition per read. */
  batchSize?: number;
  /** How often the log is read when running in the background. */
  pollIntervalMs?: number;
  /** false: nothing runs in the background; the owner calls poll()/flush() (tests drive time with `now`). */
  background?: boolean;
  /** The clock of the window (injectable: tests compress 50 s into a few). */
  now?: () => number;
  log?: (line: string) => void;
  onError?: (err: unknown) => void;
  /**
   * Which dispatch partitions this process owns (core/cluster): a node reads only those, so N
   * nodes do the list's work once, not N times. Default: every partition (no cluster).
   */
  gate?: UnitGate;
}

/** The fields a row needs from a dispatch record's history entry (conversation/history.ts layout). */
export function inHandEntry(record: DispatchRecord): InHandEntry {
  const f = record.entry.split("|");
  const control = f[3] === "C";
  let membershipHex = "";
  if (control && f[6] === MEMBERSHIP_CUSTOM_TYPE) {
    membershipHex = decodeMembershipPayload(new Uint8Array(Buffer.from(f[7] ?? "", "base64"))).users.map(uuidToHex).join("");
  }
  return {
    seq: record.conversationSeq,
    messageId: f[1] ?? "",
    senderHex: f[2] ?? "",
    control,
    countsUnread: f[4] === "1",
    createdAt: Number(f[5]),
    mentionsHex: f[8] ?? "",
    membershipHex,
    eventId: f[1] ?? "",
  };
}

interface UserPending {
  tenant: Uuid;
  user: Uuid;
  rows: Map<string, { entries: InHandEntry[]; seqs: Set<number> }>;
}

interface PartitionState {
  /** The stored checkpoint value ("" none): the compare-and-set operand of the next flush. */
  stored: string;
  /** The next record to read (ahead of `stored` by what is held in memory). */
  next: LogPosition;
  /**
   * Not owned when last polled: another node may have moved the checkpoint meanwhile, so once
   * this node owns the partition again it continues from the stored checkpoint, not from `next`.
   */
  away?: boolean;
}

/**
 * The compaction consumer of the conversation list (spec 002 §2.1, §8). It reads the dispatch log
 * from its own checkpoints — never past what the log holds (the materialised watermark, J-3) —
 * and holds each (user, conversation)'s records in memory; once per projection_compaction_window
 * (or when MAX_PENDING_ROWS rows are held, or at stop) it writes each dirty row once, then moves
 * its checkpoints past the records it wrote. A crash before that replays them: rows already
 * written see them as not newer and recompute (no double count), the others add them.
 *
 * The order of the list stays fresh on the low-latency path of the session projection (`convs`,
 * ZADD GT per record); rows here lag by at most one window, actions (read, clear, …) write at once
 * together with the records in hand for their row.
 */
export class ListCompactor {
  private readonly windowMs: number;
  private readonly maxPendingRows: number;
  private readonly batchSize: number;
  private readonly pollIntervalMs: number;
  private readonly now: () => number;
  private readonly pending = new Map<string, UserPending>();
  private pendingRows = 0;
  private windowStartedAt: number | null = null;
  private partitions: PartitionState[] = [];
  private readonly gate: UnitGate;
  private timer: NodeJS.Timeout | undefined;
  private stopped = true;
  private running: Promise<unknown> = Promise.resolve();
  private lock: Promise<unknown> = Promise.resolve();
  /** Flushes so far, for tests and status. */
  flushes = 0;

  constructor(
    private readonly store: RedisStore,
    private readonly keys: KeySpace,
    private readonly log: DispatchLog,
    private readonly list: ConversationListService,
    private readonly opts: CompactorOptions = {},
  ) {
    this.windowMs = opts.windowMs ?? PROJECTION_COMPACTION_WINDOW_MS;
    this.maxPendingRows = opts.maxPendingRows ?? MAX_PENDING_ROWS;
    this.batchSize = opts.batchSize ?? 512;
    this.pollIntervalMs = opts.pollIntervalMs ?? 250;
    this.now = opts.now ?? Date.now;
    this.gate = opts.gate ?? SOLO_GATE;
    list.takePending = (tenant, user, hex) => this.take(tenant, user, hex);
    list.restorePending = (tenant, user, hex, entries) => { for (const e of entries) this.hold(tenant, user, hex, e); };
  }

  private checkpointKey(partition: number): string {
    return listCheckpointKey(this.keys, this.log.identity.topicId, partition);
  }

  /** Serializes poll/flush of this consumer. */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.lock.then(fn, fn);
    this.lock = next.catch(() => {});
    return next;
  }

  /** Reads every checkpoint (none: from the oldest retained record). */
  load(): Promise<void> {
    return this.exclusive(() => this.loadUnlocked());
  }

  async start(): Promise<void> {
    await this.load();
    this.stopped = false;
    if (this.opts.background === false) return;
    const tick = () => {
      this.timer = undefined;
      this.running = this.poll().then(() => this.flushIfDue())
        .catch((err: unknown) => this.opts.onError?.(err))
        .finally(() => { if (!this.stopped) this.timer = setTimeout(tick, this.pollIntervalMs); });
    };
    this.timer = setTimeout(tick, this.pollIntervalMs);
  }

  /** Stops polling and writes what is held (the final flush). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running.catch(() => {});
    if (this.partitions.length > 0) await this.flush("stop");
  }

  /** Records held in memory: (user, conversation) rows and their records. */
  held(): { rows: number; users: number } {
    return { rows: this.pendingRows, users: this.pending.size };
  }

  /** Reads every partition up to its high watermark (the log's materialised end); returns records read. */
  poll(): Promise<number> {
    return this.exclusive(async () => {
      if (this.partitions.length === 0) await this.loadUnlocked();
      let total = 0;
      for (let p = 0; p < this.partitions.length; p++) {
        const st = this.partitions[p]!;
        if (!this.gate.owns("partition", p)) {
          st.away = true;
          continue;
        }
        if (st.away) {
          st.away = false;
          const key = this.checkpointKey(p);
          const stored = (await this.store.clientForKey(key).get(key)) ?? "";
          // what is held from before stays held (a record read twice is held once, and a row is
          // only ever written forward); reading resumes where the last owner's flush left off
          if (stored !== "" && stored !== st.stored) {
            st.stored = stored;
            st.next = parsePosition(stored);
          }
        }
        for (;;) {
          if (this.pendingRows >= this.maxPendingRows) return total;
          const { watermarks: w, entries } = await this.log.readFrom(p, st.next, this.batchSize);
          if (st.next.offset < w.low) {
            // retention dropped records this consumer never read: continue from the oldest kept
            metrics.checkpointLost.inc();
            this.opts.log?.(`conversation list: partition ${p} lost offsets [${st.next.offset}, ${w.low}) to retention; rows they touched are corrected by reconcile`);
            st.next = w.lowPosition;
            continue;
          }
          for (const e of entries) this.ingest(e.record);
          total += entries.length;
          metrics.consumedRecords.inc(entries.length);
          if (entries.length > 0) {
            const last = entries[entries.length - 1]!;
            st.next = { offset: last.offset + 1, id: last.id };
          }
          if (entries.length < this.batchSize) break;
        }
      }
      return total;
    });
  }

  private async loadUnlocked(): Promise<void> {
    this.partitions = [];
    for (let p = 0; p < this.log.identity.partitionCount; p++) {
      const key = this.checkpointKey(p);
      const stored = (await this.store.clientForKey(key).get(key)) ?? "";
      this.partitions.push({ stored, next: stored === "" ? (await this.log.watermarks(p)).lowPosition : parsePosition(stored) });
    }
  }

  private ingest(record: DispatchRecord): void {
    const e = inHandEntry(record);
    const hex = uuidToHex(record.conversation);
    for (const user of record.recipients) this.hold(record.tenant, user, hex, e);
  }

  private hold(tenant: Uuid, user: Uuid, hex: string, e: InHandEntry): void {
    const id = tenant + user;
    let u = this.pending.get(id);
    if (!u) {
      u = { tenant, user, rows: new Map() };
      this.pending.set(id, u);
    }
    let r = u.rows.get(hex);
    if (!r) {
      r = { entries: [], seqs: new Set() };
      u.rows.set(hex, r);
      this.pendingRows++;
    }
    // one delivery of a record per window: the durable log repeats what a replay re-reads
    if (r.seqs.has(e.seq)) return;
    r.seqs.add(e.seq);
    r.entries.push(e);
    this.windowStartedAt ??= this.now();
  }

  private take(tenant: Uuid, user: Uuid, hex: string): InHandEntry[] {
    const u = this.pending.get(tenant + user);
    const r = u?.rows.get(hex);
    if (!u || !r) return [];
    u.rows.delete(hex);
    this.pendingRows--;
    if (u.rows.size === 0) this.pending.delete(tenant + user);
    return r.entries;
  }

  /** Flushes when the window has elapsed or too many rows are held; returns whether it flushed. */
  async flushIfDue(): Promise<boolean> {
    if (this.pendingRows >= this.maxPendingRows) {
      await this.flush("pending_limit");
      return true;
    }
    if (this.windowStartedAt !== null && this.now() - this.windowStartedAt >= this.windowMs) {
      await this.flush("window");
      return true;
    }
    if (this.windowStartedAt === null && this.partitions.some((p) => p.stored !== positionText(p.next))) {
      // only records that touched nobody were read: move the checkpoints without a window
      await this.flush("window");
      return true;
    }
    return false;
  }

  /**
   * Writes every held row (one write per (user, conversation)), then moves each checkpoint to
   * where reading stopped. A user whose write fails keeps their records and the checkpoints stay.
   */
  flush(reason: "window" | "pending_limit" | "stop" = "window"): Promise<void> {
    return this.exclusive(async () => {
      const users = [...this.pending.values()];
      this.pending.clear();
      this.pendingRows = 0;
      this.windowStartedAt = null;
      const targets = this.partitions.map((p) => positionText(p.next));
      let failed: unknown;
      for (const u of users) {
        const rows: PendingRow[] = [...u.rows.entries()].map(([conversationHex, r]) => ({ conversationHex, entries: r.entries }));
        try {
          await this.list.flushUser(u.tenant, u.user, rows);
        } catch (err) {
          failed ??= err;
          for (const r of rows) for (const e of r.entries) this.hold(u.tenant, u.user, r.conversationHex, e);
        }
      }
      this.flushes++;
      metrics.flushes.inc({ reason });
      if (failed !== undefined) throw failed;
      for (const [p, st] of this.partitions.entries()) {
        const to = targets[p]!;
        if (to === st.stored) continue;
        const key = this.checkpointKey(p);
        const moved = await advanceListCheckpointScript.run(this.store.clientForKey(key), { checkpoint: key }, { expected: st.stored, to });
        // another consumer moved it: take its value (what we wrote again is harmless: not newer → recompute)
        st.stored = moved ? to : ((await this.store.clientForKey(key).get(key)) ?? "");
      }
    });
  }

  /** The stored checkpoint offsets (tests: the consumer never passes the log's high watermark). */
  checkpoints(): { partition: number; stored: LogPosition | null; next: LogPosition }[] {
    return this.partitions.map((p, partition) => ({ partition, stored: p.stored === "" ? null : parsePosition(p.stored), next: p.next }));
  }
}

function parsePosition(raw: string): LogPosition {
  const cut = raw.indexOf("|");
  return { offset: Number(raw.slice(0, cut)), id: raw.slice(cut + 1) };
}

function positionText(p: LogPosition): string {
  return `${p.offset}|${p.id}`;
}
