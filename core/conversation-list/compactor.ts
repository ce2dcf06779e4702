import { REDIS_CALL_MEMBER_BUDGET, tenantUserKey, uuidToHex, type KeySpace, type Uuid } from "../base/index.js";
import { decodeMembershipPayload, HIST_FIELD, MEMBERSHIP_CUSTOM_TYPE, RECALL_CUSTOM_TYPE, recordHistoryParts } from "../conversation/index.js";
import { SOLO_GATE, type UnitGate } from "../cluster/index.js";
import { dispatchRecordKey, type DispatchLog, type DispatchRecord, type LogPosition } from "../dispatch/index.js";
import type { RedisStore } from "../store/index.js";
import { eachLimited } from "../support/index.js";
import { listCheckpointKey } from "./keys.js";
import { metrics } from "./metrics.js";
import { LIVE_PUBLISH_INTERVAL_MS, LiveThrottle } from "./live-throttle.js";
import type { InHandEntry } from "./row.js";
import { advanceListCheckpointScript } from "./scripts.js";
import type { ConversationListService, PendingRow } from "./service.js";

/** projection_compaction_window (spec 002 §2.1, §8): a row is written at most once per window. */
export const PROJECTION_COMPACTION_WINDOW_MS = 5000;

/** Rows held in memory at most before the window is flushed early (bounds the consumer's memory). */
export const MAX_PENDING_ROWS = 100_000;

/**
 * Users whose rows one flush writes at the same time. A user's write is a read and a script on
 * that user's keys; one after another, a message to a million members was a million such writes in
 * a row (the list lagged the session projection by minutes, issue 22). Writes of different users
 * touch different keys and the per-user lock orders one user's writes, so they may overlap; 8 keeps
 * what waits on the shared connections ahead of a small group's send short.
 */
export const FLUSH_USERS_IN_FLIGHT = 8;

/**
 * Recipients ingested from the log before the consumer yields the event loop: a read of 512
 * records of a big group's fanout is 512,000 recipients, held in one synchronous turn otherwise
 * (every request of the node waits). One call's budget of members (core/base/limits.ts).
 */
export const INGEST_RECIPIENTS_PER_TURN = REDIS_CALL_MEMBER_BUDGET;

export interface CompactorOptions {
  /** projection_compaction_window. */
  windowMs?: number;
  maxPendingRows?: number;
  /** Records read per partition per read. */
  batchSize?: number;
  /** How often the log is read when running in the background. */
  pollIntervalMs?: number;
  /** A watched user's live rows are published at most once per this many ms (LIVE_PUBLISH_INTERVAL_MS; 0: at every hand-off). */
  livePublishIntervalMs?: number;
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
  /**
   * Records [from, to) of a partition were dropped by retention before this consumer read them
   * (§3.4 "checkpoint rollback replay"): the stack hands it to the RollbackReconciler.
   */
  onLost?: (partition: number, from: number, to: number) => void;
}

/** The fields a row needs from a dispatch record's history entry (read through conversation/history.ts). */
export function inHandEntry(record: DispatchRecord): InHandEntry {
  const { fields: f, body } = recordHistoryParts(record);
  const control = f.get(HIST_FIELD.kind) === "C";
  let membershipHex = "";
  if (control && f.get(HIST_FIELD.contentType) === MEMBERSHIP_CUSTOM_TYPE) {
    membershipHex = decodeMembershipPayload(new Uint8Array(Buffer.from(body, "base64"))).users.map(uuidToHex).join("");
  }
  const messageId = f.get(HIST_FIELD.messageId) ?? "";
  return {
    seq: record.conversationSeq,
    messageId,
    senderHex: f.get(HIST_FIELD.senderId) ?? "",
    control,
    countsUnread: f.get(HIST_FIELD.countsUnread) === "1",
    createdAt: Number(f.get(HIST_FIELD.createdAt)),
    mentionsHex: f.get(HIST_FIELD.mentions) ?? "",
    membershipHex,
    eventId: messageId,
    neutral: f.get(HIST_FIELD.order) === "0",
    recallOf: control && f.get(HIST_FIELD.contentType) === RECALL_CUSTOM_TYPE ? {
      seq: Number(f.get(HIST_FIELD.targetSeq)), senderHex: f.get(HIST_FIELD.targetSenderId) ?? "",
      countsUnread: f.get(HIST_FIELD.targetCountsUnread) === "1", mentionsHex: f.get(HIST_FIELD.targetMentions) ?? "",
    } : null,
  };
}

/** Users whose `pending` key the consumer keeps made (then forgotten at once and made again). */
const USER_IDS_MAX = 200_000;

interface UserPending {
  tenant: Uuid;
  user: Uuid;
  /** Per conversation hex: the records held (a record is held once per row). */
  rows: Map<string, HeldRow>;
}

interface HeldRow {
  entries: InHandEntry[];
  /** The newest seq held (-1: none): a record above it is new, nothing to look up. */
  top: number;
  /** Every seq held, made the first time a record comes at or below `top` (a repeat, or out of order), kept from then on. */
  seqs: Set<number> | null;
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
 * The low-latency path: the relay hands each appended batch to `lowLatency` too; its records are
 * held like the log's (one per seq) and, for a user someone looks at, published at once as the
 * live rows and badge (ConversationListService.publishLive: stored row + held records, in memory).
 * Reads of the list are that live view. The stored rows still move only at the flush. A record the
 * hand-off brought is remembered by its key (`handed`, two windows): the log read, reaching it,
 * passes it by without touching its recipients again, whether it is still held or already written.
 * Actions (read, clear, …) write at once together with the records in hand for their row.
 */
export class ListCompactor {
  readonly windowMs: number;
  private readonly maxPendingRows: number;
  private readonly batchSize: number;
  private readonly pollIntervalMs: number;
  private readonly now: () => number;
  private readonly pending = new Map<string, UserPending>();
  /** Users the running flush took and has not written yet: still part of the live view. */
  private readonly inFlight = new Map<string, UserPending>();
  /**
   * Records the low-latency hand-off held for all their recipients (dispatchRecordKey): the log
   * read passes them by once (each recipient's row holds them or has them written). Before, the
   * log read held every recipient of every record a second time only to find it held: half of
   * the list's work per message. Two generations, rotated at each flush: a record the log read
   * has not reached by then is held again when it does (its rows recompute: correct, only dearer).
   */
  private handed = new Set<string>();
  private handedOld = new Set<string>();
  private pendingRows = 0;
  private windowStartedAt: number | null = null;
  private partitions: PartitionState[] = [];
  private readonly gate: UnitGate;
  /** Publishes the live rows of watched users, at most once per interval each. */
  private readonly live: LiveThrottle;
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
    this.live = new LiveThrottle(opts.livePublishIntervalMs ?? LIVE_PUBLISH_INTERVAL_MS, (tenant, user, hexes) => {
      this.list.publishLive(tenant, user, hexes).catch((err: unknown) => this.opts.onError?.(err));
    });
    list.takePending = (tenant, user, hex) => this.take(tenant, user, hex);
    list.restorePending = (tenant, user, hex, entries) => {
      for (const e of entries) this.hold(tenant, user, hex, e);
    };
    list.heldOf = (tenant, user) => this.heldOf(tenant, user);
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
    this.live.stop();
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running.catch(() => {});
    if (this.partitions.length > 0) await this.flush("stop");
  }

  /** Records held in memory: (user, conversation) rows and their records. */
  held(): { rows: number; users: number } {
    return { rows: this.pendingRows, users: this.pending.size };
  }

  /**
   * The relay's low-latency hand-off (runtime: onAppended): records of the partitions this node
   * owns are held at once, and the users someone looks at get their live rows published.
   */
  lowLatency(records: readonly DispatchRecord[]): void {
    if (this.stopped) return;
    const touched = new Map<string, { tenant: Uuid; user: Uuid; hexes: Set<string> }>();
    for (const r of records) {
      if (!this.gate.owns("partition", this.log.partitionOf(r.tenant, r.conversation))) continue;
      metrics.lowLatencyRecords.inc();
      // a record naming nobody (a members record) holds nothing: nothing for the log read to pass by
      if (r.recipients.length === 0) continue;
      this.ingest(r, touched);
      this.handed.add(dispatchRecordKey(r));
    }
    this.publish(touched);
  }

  private publish(touched: Map<string, { tenant: Uuid; user: Uuid; hexes: Set<string> }>): void {
    for (const [id, t] of touched) this.live.offer(id, t.tenant, t.user, t.hexes);
  }

  /** The records held for a user and not yet written (pending or in the running flush): the live view's input (read only). */
  heldOf(tenant: Uuid, user: Uuid): ReadonlyMap<string, readonly InHandEntry[]> {
    const out = new Map<string, readonly InHandEntry[]>();
    const id = tenantUserKey(tenant, user);
    for (const u of [this.inFlight.get(id), this.pending.get(id)]) {
      // the held array itself when one generation holds the row (nearly always): read only, never
      // copied (a busy row holds thousands of records and the live view asks at every hand-off)
      for (const [hex, r] of u?.rows ?? []) {
        const had = out.get(hex);
        out.set(hex, had ? [...had, ...r.entries] : r.entries);
      }
    }
    return out;
  }

  /** Reads every partition up to its high watermark (the log's materialised end); returns records read. */
  poll(): Promise<number> {
    const touched = new Map<string, { tenant: Uuid; user: Uuid; hexes: Set<string> }>();
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
            this.lostRange(p, st.next.offset, w.low);
            st.next = w.lowPosition;
            continue;
          }
          let sinceYield = 0;
          for (const e of entries) {
            if (this.handedTook(e.record)) continue;
            this.ingest(e.record, touched);
            sinceYield += e.record.recipients.length;
            if (sinceYield >= INGEST_RECIPIENTS_PER_TURN) {
              sinceYield = 0;
              await new Promise<void>((resolve) => setImmediate(resolve));
            }
          }
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
    }).finally(() => this.publish(touched));
  }

  private async loadUnlocked(): Promise<void> {
    this.partitions = [];
    for (let p = 0; p < this.log.identity.partitionCount; p++) {
      const key = this.checkpointKey(p);
      const stored = (await this.store.clientForKey(key).get(key)) ?? "";
      if (stored !== "") {
        this.partitions.push({ stored, next: parsePosition(stored) });
        continue;
      }
      // no checkpoint while retention already dropped records: those were never written to rows
      // (a behind checkpoint is found by the first poll)
      const w = await this.log.watermarks(p);
      if (w.low > 0 && this.gate.owns("partition", p)) this.lostRange(p, 0, w.low);
      this.partitions.push({ stored, next: w.lowPosition });
    }
  }

  private lostRange(partition: number, from: number, to: number): void {
    metrics.checkpointLost.inc();
    if (this.opts.onLost) this.opts.onLost(partition, from, to);
    else this.opts.log?.(`conversation list: partition ${partition} lost offsets [${from}, ${to}) to retention; nothing reconciles the rows they touched`);
  }

  /** True when the low-latency hand-off held the record (it is forgotten then: the log read reaches a record once). */
  private handedTook(record: DispatchRecord): boolean {
    if (this.handed.size === 0 && this.handedOld.size === 0) return false;
    const key = dispatchRecordKey(record);
    return this.handed.delete(key) || this.handedOld.delete(key);
  }

  private ingest(record: DispatchRecord, touched: Map<string, { tenant: Uuid; user: Uuid; hexes: Set<string> }>): void {
    const e = inHandEntry(record);
    const hex = uuidToHex(record.conversation);
    for (const user of record.recipients) {
      const id = this.userId(record.tenant, user);
      if (!this.hold(record.tenant, user, hex, e, id)) continue;
      // only a user someone looks at live is published (publishLive answers null for the others)
      if (!this.list.looksLive(record.tenant, user, id)) continue;
      let t = touched.get(id);
      if (!t) touched.set(id, (t = { tenant: record.tenant, user, hexes: new Set() }));
      t.hexes.add(hex);
    }
  }

  /**
   * A user's key of `pending` (tenantUserKey) as one string made once per user and kept: the
   * low-latency hand-off and the log read look every recipient of every record up, and a key
   * concatenated afresh each time was hashed afresh each time (and garbage right after). It is
   * tenantUserKey, the session view's key of a user too, so the live-interest check takes it as is.
   */
  private userId(tenant: Uuid, user: Uuid): string {
    let users = this.userIds.get(tenant);
    if (!users) this.userIds.set(tenant, (users = new Map()));
    let id = users.get(user);
    if (id === undefined) {
      if (this.userIdCount >= USER_IDS_MAX) {
        this.userIds.clear();
        this.userIdCount = 0;
        this.userIds.set(tenant, (users = new Map()));
      }
      id = tenantUserKey(tenant, user);
      users.set(user, id);
      this.userIdCount++;
    }
    return id;
  }

  private readonly userIds = new Map<Uuid, Map<Uuid, string>>();
  private userIdCount = 0;

  /** Holds a record for a row; false when it was held already. */
  private hold(tenant: Uuid, user: Uuid, hex: string, e: InHandEntry, id = tenantUserKey(tenant, user)): boolean {
    let u = this.pending.get(id);
    if (!u) {
      u = { tenant, user, rows: new Map() };
      this.pending.set(id, u);
    }
    let r = u.rows.get(hex);
    if (!r) {
      r = { entries: [], top: -1, seqs: null };
      u.rows.set(hex, r);
      this.pendingRows++;
    }
    // one delivery of a record per window: the durable log repeats what a replay re-reads, and a
    // record the log read reached before the hand-off did comes twice. Records mostly come in seq
    // order, each above the last: those need no set of every seq held (a set entry per recipient
    // and message was the most of this consumer's garbage in bench/engine-cost)
    if (e.seq > r.top) {
      r.top = e.seq;
      r.seqs?.add(e.seq);
    } else {
      r.seqs ??= new Set(r.entries.map((x) => x.seq));
      if (r.seqs.has(e.seq)) return false;
      r.seqs.add(e.seq);
    }
    r.entries.push(e);
    this.windowStartedAt ??= this.now();
    return true;
  }

  private take(tenant: Uuid, user: Uuid, hex: string): InHandEntry[] {
    const id = tenantUserKey(tenant, user);
    const u = this.pending.get(id);
    const r = u?.rows.get(hex);
    if (!u || !r) return [];
    u.rows.delete(hex);
    this.pendingRows--;
    if (u.rows.size === 0) this.pending.delete(id);
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
      const users = [...this.pending.entries()];
      for (const [id, u] of users) this.inFlight.set(id, u);
      this.pending.clear();
      this.pendingRows = 0;
      this.windowStartedAt = null;
      this.handedOld = this.handed;
      this.handed = new Set();
      const targets = this.partitions.map((p) => positionText(p.next));
      // a failed user keeps their records (held again) and the checkpoints stay: eachLimited throws the first failure after all settled
      await eachLimited(users, FLUSH_USERS_IN_FLIGHT, async ([id, u]) => {
        const rows: PendingRow[] = [...u.rows.entries()].map(([conversationHex, r]) => ({ conversationHex, entries: r.entries }));
        try {
          await this.list.flushUser(u.tenant, u.user, rows);
        } catch (err) {
          for (const [hex, r] of u.rows) for (const e of r.entries) this.hold(u.tenant, u.user, hex, e);
          throw err;
        } finally {
          this.inFlight.delete(id);
        }
      }).finally(() => {
        this.flushes++;
        metrics.flushes.inc({ reason });
      });
      for (const [p, st] of this.partitions.entries()) {
        const to = targets[p]!;
        if (to === st.stored) continue;
        const key = this.checkpointKey(p);
        const moved = await this.store.commit(advanceListCheckpointScript, this.store.clientForKey(key), { checkpoint: key }, { expected: st.stored, to });
        // another consumer moved it: take its value (what we wrote again is harmless: not newer → recompute)
        st.stored = moved ? to : ((await this.store.clientForKey(key).get(key)) ?? "");
      }
    });
  }

  /**
   * Partitions whose stored list checkpoint (written by whichever node consumes the partition)
   * is behind the log's high watermark: records not yet written to rows by anyone.
   */
  async lagging(): Promise<number[]> {
    const behind: number[] = [];
    for (let p = 0; p < this.log.identity.partitionCount; p++) {
      const key = this.checkpointKey(p);
      const [stored, w] = await Promise.all([this.store.clientForKey(key).get(key), this.log.watermarks(p)]);
      const offset = stored ? parsePosition(stored).offset : w.low;
      if (offset < w.high) behind.push(p);
    }
    return behind;
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
