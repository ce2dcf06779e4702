import { encodeRegistrationHex } from "./authority.js";
import type { DispatchIdentity, DispatchLog, DispatchRecord, LogPosition, Watermarks } from "../dispatch/index.js";
import { compareStreamIds, dispatchRecordKey, LOG_START } from "../dispatch/index.js";
import type { ProjectionEpoch } from "./epoch.js";
import { FailedPreconditionError } from "../base/index.js";
import { uuidToHex, type Uuid, type UuidHex } from "../base/index.js";
import type { KeySpace } from "../base/index.js";
import { checkpointKey, userKeys, type UserKeys } from "./keys.js";
import { advanceCheckpointScript, projectEntriesScript, type ProjectedEntry } from "./scripts.js";
import { metrics } from "./metrics.js";
import type { RedisStore } from "../store/index.js";
import { SOLO_GATE, unitLeaseKey, type Fence, type UnitGate } from "../cluster/index.js";
import { HIST_FIELD, leavingUsersOf, recordHistoryParts } from "../conversation/index.js";

/** Entries per registration script call: bounds how long one call holds Redis. */
const MAX_ENTRIES_PER_CALL = 512;

/** Registration calls one target's connection has queued at most while a batch is projected. */
const PROJECT_CALLS_IN_FLIGHT = 2;

/**
 * Writes dispatch records into the session projection through the ONE registration script
 * (lua/projectEntries-n.lua), shared by the durable consumer and the low-latency path: one call
 * per instance per batch (per hash tag on a Redis Cluster, where a script sees one slot).
 */
export class ProjectionWriter {
  constructor(private readonly store: RedisStore, private readonly keys: KeySpace) {}

  // a user's key names need a blake3 of (tenant, user); a 500-member group's message would hash
  // 500 times per record without this (the user's hex form is kept beside them for the same reason)
  // per tenant, then per user: no key string is concatenated (and hashed) per recipient of every record
  private readonly userKeyCache = new Map<Uuid, Map<Uuid, { keys: UserKeys; hex: UuidHex }>>();
  private userKeyCount = 0;

  private userKeys(tenant: Uuid, user: Uuid): { keys: UserKeys; hex: UuidHex } {
    let users = this.userKeyCache.get(tenant);
    if (!users) this.userKeyCache.set(tenant, (users = new Map()));
    let k = users.get(user);
    if (!k) {
      if (this.userKeyCount >= 200_000) {
        this.userKeyCache.clear();
        this.userKeyCount = 0;
        this.userKeyCache.set(tenant, (users = new Map()));
      }
      k = { keys: userKeys(this.keys, tenant, user), hex: uuidToHex(user) };
      users.set(user, k);
      this.userKeyCount++;
    }
    return k;
  }

  /**
   * Projects every recipient of every record; returns how many conversations entered a user's set.
   * One entry per (user, conversation) of the batch: the relay hands over a group commit's records
   * together (about 120 seqs of one group in bench/engine-cost), and their entries for one user
   * would all be ZADD GT of the same member. Their merge is the same step: the highest score, and
   * the first entry's registration item (the one whose ZADD would have added an absent member; the
   * later ones find it present and register nothing).
   */
  async project(records: readonly DispatchRecord[]): Promise<number> {
    const entries: ProjectedEntry[] = [];
    const tags: string[] = [];
    // per conversation: the user's cached keys (one object per user) → their entry
    const merged = new Map<string, Map<UserKeys, ProjectedEntry>>();
    for (const record of records) {
      const parts = recordHistoryParts(record);
      const createdAt = Number(parts.fields.get(HIST_FIELD.createdAt));
      const conversationHex = uuidToHex(record.conversation);
      const tenantHex = uuidToHex(record.tenant);
      const leaving = leavingUsersOf(parts);
      // a recall or edit event (ord=0) renders at its target: it ranks nobody's conversation (spec 003 §2.3)
      const neutral = parts.fields.get(HIST_FIELD.order) === "0";
      let byUser = merged.get(conversationHex);
      if (!byUser) merged.set(conversationHex, (byUser = new Map()));
      for (const user of record.recipients) {
        const u = this.userKeys(record.tenant, user);
        // a user who leaves or is removed gets the event but may not see it (seq = left_at): it
        // must not rank their conversation (issue 12); score 0 under ZADD GT changes nothing
        const score = neutral || leaving?.has(user) ? 0 : createdAt;
        const had = byUser.get(u.keys);
        if (had) {
          if (score > had.createdAt) had.createdAt = score;
          continue;
        }
        const entry = { keys: u.keys, conversationHex, createdAt: score, pendingItem: encodeRegistrationHex(tenantHex, u.hex, conversationHex, "group", createdAt) };
        byUser.set(u.keys, entry);
        tags.push(u.keys.tag);
        entries.push(entry);
      }
    }
    const counts = await Promise.all(this.store.byTarget(tags).map(async ({ client, idx }) => {
      // every entry on one target: the list as built, in one call when it fits
      if (idx.length === entries.length && idx.length <= MAX_ENTRIES_PER_CALL) return projectEntriesScript.run(client, entries);
      // a fanout's chunks bring thousands of entries: at most PROJECT_CALLS_IN_FLIGHT calls queue on
      // the connection at once, so a small group's send behind them waits for two calls, not for
      // the whole audience (issue 22: 200 calls queued at once made that wait ~300 ms)
      let sum = 0;
      const slices: number[][] = [];
      for (let i = 0; i < idx.length; i += MAX_ENTRIES_PER_CALL) slices.push(idx.slice(i, i + MAX_ENTRIES_PER_CALL));
      for (let i = 0; i < slices.length; i += PROJECT_CALLS_IN_FLIGHT) {
        const done = await Promise.all(slices.slice(i, i + PROJECT_CALLS_IN_FLIGHT).map((slice) => projectEntriesScript.run(client, slice.map((j) => entries[j]!))));
        sum += done.reduce((a, n) => a + n, 0);
      }
      return sum;
    }));
    const registered = counts.reduce((a, n) => a + n, 0);
    if (registered > 0) metrics.ucsPending.inc(registered);
    return registered;
  }
}

export const PARTITION_VERDICTS = ["OK", "NO_CHECKPOINT", "OVER_WINDOW", "BEYOND_HIGH", "IDENTITY_MISMATCH"] as const;
export type PartitionVerdict = (typeof PARTITION_VERDICTS)[number];

export interface Checkpoint {
  position: LogPosition;
  identity: DispatchIdentity;
  updatedAt: number;
  /** The raw stored position, the compare-and-set operand. */
  raw: string;
}

export interface PartitionAudit {
  partition: number;
  verdict: PartitionVerdict;
  /** The next offset the consumer will read; null without a checkpoint. */
  checkpoint: number | null;
  low: number;
  high: number;
  /** Records appended but not yet consumed (high − checkpoint); null without a checkpoint. */
  lag: number | null;
  /** Append time (ms) of the newest record in the partition; null when it is empty. */
  newestMs: number | null;
  /** When the consumer last moved this partition's checkpoint (ms; null without one). */
  checkpointUpdatedAt: number | null;
  /** Offsets [from, to) retention dropped before the consumer read them (OVER_WINDOW), or that a lost projection never saw (NO_CHECKPOINT with low > 0). */
  lost: { from: number; to: number } | null;
  detail: string;
}

export interface ProjectionStartReport {
  audits: PartitionAudit[];
  /** The epoch after start-up; bumped (once) when any partition lost records. */
  epoch: number;
  epochBumped: boolean;
}

/**
 * A partition's audit as gauges: `qim_session_projection_partition_verdict` is 1 for its verdict
 * and 0 for the four others (a series per verdict, so that an alert sees a verdict go away as well
 * as come), `qim_session_projection_checkpoint_lag` its lag, absent while it has none (no
 * checkpoint, or one the consumer must not continue from). Every audit and every poll of the
 * consumer passes through here, so the gauges are at most one poll old while it runs.
 */
function observe(a: PartitionAudit): void {
  const partition = String(a.partition);
  for (const verdict of PARTITION_VERDICTS) metrics.partitionVerdict.set({ partition, verdict }, a.verdict === verdict ? 1 : 0);
  if (a.lag === null) metrics.checkpointLag.remove({ partition });
  else metrics.checkpointLag.set({ partition }, a.lag);
}

/** Verdicts the consumer must not continue on (DESIGN §2: fail closed), unlike the recoverable NO_CHECKPOINT and OVER_WINDOW. */
export function refusedVerdict(a: PartitionAudit): boolean {
  return a.verdict === "BEYOND_HIGH" || a.verdict === "IDENTITY_MISMATCH";
}

/** Start-up found a partition the consumer must not continue on (DESIGN §2: fail closed). */
export class ProjectionRefusedError extends FailedPreconditionError {
  constructor(readonly audits: PartitionAudit[]) {
    const bad = audits.filter(refusedVerdict);
    super(`session projection refuses to start: ${bad.map((a) => `partition ${a.partition} ${a.verdict}: ${a.detail}`).join("; ")}`,
      { partitions: bad.map((a) => a.partition) });
    this.name = "ProjectionRefusedError";
  }
}

export interface ProjectorOptions {
  /** Records read per partition per step. */
  batchSize?: number;
  /** How often every partition is polled when idle (kicks make it sooner). */
  pollIntervalMs?: number;
  /** false: no background polling after start(); the owner calls catchUp() (tests, drills). */
  poll?: boolean;
  /** One line per notable event (start-up verdicts, epoch bumps, lost ranges). */
  log?: (line: string) => void;
  onError?: (err: unknown) => void;
  now?: () => number;
  /**
   * Which partitions this process owns and the fence its checkpoint writes carry (core/cluster);
   * default: every partition, token 0 (no cluster). Only owned partitions are polled.
   */
  gate?: UnitGate;
}

/** How long a poll trusts the checkpoint this consumer last read or wrote before reading it again. */
const KNOWN_CHECKPOINT_MS = 1000;

/**
 * Records the low-latency path of this process projected that the durable consumer has not read
 * yet, remembered at most: beyond, the oldest is forgotten (the consumer then projects it again,
 * which is harmless), so that records another consumer moved past cannot pile up.
 */
const PROJECTED_AHEAD_MAX = 20_000;


/** A checkpoint past the newest record ever appended: the log lost records it had acknowledged. */
function beyondHigh(at: LogPosition, w: Watermarks): boolean {
  return at.offset > w.high || compareStreamIds(at.id, w.lastId) > 0;
}

function sameIdentity(a: DispatchIdentity, b: DispatchIdentity): boolean {
  return a.clusterId === b.clusterId && a.topicId === b.topicId && a.partitionCount === b.partitionCount;
}

function describeIdentity(i: DispatchIdentity): string {
  return `cluster_id=${i.clusterId} topic_id=${i.topicId} partition_count=${i.partitionCount}`;
}

/**
 * The session projection's durable consumer (spec 002 §2.2, ADR-0021 §4): reads every partition
 * of the dispatch log from its checkpoint, writes every recipient through the registration
 * script, then advances the checkpoint by compare-and-set — never before all of a record's
 * recipients are written. At start-up it audits each partition (DESIGN §2 "Epoch and rebuild"):
 * a checkpoint behind the retention window, or missing while the log has been trimmed, bumps the
 * epoch once and continues from the low watermark, logging the lost ranges; a checkpoint beyond
 * the high watermark or an identity mismatch refuses to start.
 */
export class SessionProjector {
  readonly writer: ProjectionWriter;
  private readonly batchSize: number;
  private readonly pollIntervalMs: number;
  private readonly now: () => number;
  private readonly gate: UnitGate;
  private stopped = true;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> = Promise.resolve();
  private readonly partitionLocks = new Map<number, Promise<number>>();
  /**
   * Each partition's checkpoint as this consumer last read or wrote it, and when. A poll uses it
   * instead of reading the checkpoint back while it is fresh (KNOWN_CHECKPOINT_MS): this consumer
   * wrote it. A compare-and-set that fails (another consumer, a wipe) drops it, and it is re-read
   * at least that often, so a checkpoint moved or deleted elsewhere is noticed.
   */
  private readonly known = new Map<number, { cp: Checkpoint; at: number }>();
  /** Set when a runtime audit finds a partition it must not continue on; polling stops. */
  failure: Error | null = null;
  /**
   * Records whose recipients the low-latency path of this process has all written (by the same
   * script): the durable consumer, reaching them, advances its checkpoint past them without
   * writing them a second time. Only an optimisation: a record not found here is projected again.
   * `generation` moves when checkpoints are wiped, so that a low-latency write that was in flight
   * meanwhile is not remembered (the replay after a wipe, or after a checkpoint recovered from
   * NO_CHECKPOINT or OVER_WINDOW, projects everything).
   */
  private readonly projectedAhead = new Set<string>();
  private generation = 0;

  constructor(
    private readonly store: RedisStore,
    private readonly keys: KeySpace,
    private readonly log: DispatchLog,
    private readonly epoch: ProjectionEpoch,
    private readonly opts: ProjectorOptions = {},
  ) {
    this.writer = new ProjectionWriter(store, keys);
    this.batchSize = opts.batchSize ?? 256;
    this.pollIntervalMs = opts.pollIntervalMs ?? 250;
    this.now = opts.now ?? Date.now;
    this.gate = opts.gate ?? SOLO_GATE;
  }

  private say(line: string): void {
    this.opts.log?.(`session projection: ${line}`);
  }

  private checkpointKey(partition: number): string {
    return checkpointKey(this.keys, this.log.identity.topicId, partition);
  }

  async readCheckpoint(partition: number): Promise<Checkpoint | null> {
    const key = this.checkpointKey(partition);
    const h = await this.store.clientForKey(key).hgetall(key);
    if (!h.pos) {
      this.known.delete(partition);
      return null;
    }
    const cut = h.pos.indexOf("|");
    const cp = {
      position: { offset: Number(h.pos.slice(0, cut)), id: h.pos.slice(cut + 1) },
      identity: { clusterId: h.cluster_id ?? "", topicId: h.topic_id ?? "", partitionCount: Number(h.partition_count) },
      updatedAt: Number(h.updated_at ?? 0),
      raw: h.pos,
    };
    this.known.set(partition, { cp, at: Date.now() });
    return cp;
  }

  /** The checkpoint for a poll: the one this consumer knows while fresh, else read from Redis. */
  private async pollCheckpoint(partition: number): Promise<Checkpoint | null> {
    const k = this.known.get(partition);
    if (k && Date.now() - k.at < KNOWN_CHECKPOINT_MS) return k.cp;
    return this.readCheckpoint(partition);
  }

  /**
   * Moves a partition's checkpoint from `expected` (null: none) to `to`; false when another
   * consumer moved it first, or when the partition's lease fenced the write out (a newer owner):
   * then the partition is dropped locally.
   */
  private async advance(partition: number, expected: string | null, to: LogPosition, fence: Fence): Promise<boolean> {
    const id = this.log.identity;
    const raw = `${to.offset}|${to.id}`;
    const updatedAt = this.now();
    const key = this.checkpointKey(partition);
    const { moved, fenced } = await this.store.commit(advanceCheckpointScript, this.store.clientForKey(key), { checkpoint: key, lease: unitLeaseKey(this.keys, "partition", partition) },
      { expected, to: raw, clusterId: id.clusterId, topicId: id.topicId, partitionCount: id.partitionCount, updatedAt, owner: fence.owner, token: fence.token });
    if (moved) this.known.set(partition, { cp: { position: to, identity: id, updatedAt, raw }, at: Date.now() });
    else this.known.delete(partition);
    if (fenced) this.gate.refused("partition", partition, "checkpoint", fence);
    return moved;
  }

  /** Deletes every partition's checkpoint (drills: "the checkpoints were lost"). */
  async wipeCheckpoints(): Promise<void> {
    this.forgetProjectedAhead();
    for (let p = 0; p < this.log.identity.partitionCount; p++) {
      const key = this.checkpointKey(p);
      await this.store.clientForKey(key).del(key);
      this.known.delete(p);
    }
  }

  /** From now on every record is projected again, also one whose low-latency write is in flight. */
  private forgetProjectedAhead(): void {
    this.generation++;
    this.projectedAhead.clear();
  }

  private verdict(partition: number, cp: Checkpoint | null, w: Watermarks, stored: DispatchIdentity | null): PartitionAudit {
    const base = { partition, low: w.low, high: w.high, newestMs: w.newestMs, checkpointUpdatedAt: cp?.updatedAt ?? null };
    const mine = this.log.identity;
    if (stored && !sameIdentity(stored, mine)) {
      return { ...base, verdict: "IDENTITY_MISMATCH", checkpoint: cp?.position.offset ?? null, lag: null, lost: null,
        detail: `the log records ${describeIdentity(stored)}, this process expects ${describeIdentity(mine)}` };
    }
    if (cp && !sameIdentity(cp.identity, mine)) {
      return { ...base, verdict: "IDENTITY_MISMATCH", checkpoint: cp.position.offset, lag: null, lost: null,
        detail: `the checkpoint was taken on ${describeIdentity(cp.identity)}, this process expects ${describeIdentity(mine)}` };
    }
    if (!cp) {
      return { ...base, verdict: "NO_CHECKPOINT", checkpoint: null, lag: null,
        lost: w.low > 0 ? { from: 0, to: w.low } : null,
        detail: w.low > 0 ? `no checkpoint and the log has dropped offsets [0, ${w.low}): the projection may have lost them` : "no checkpoint; every record is still retained" };
    }
    const at = cp.position.offset;
    if (beyondHigh(cp.position, w)) {
      return { ...base, verdict: "BEYOND_HIGH", checkpoint: at, lag: null, lost: null,
        detail: `checkpoint ${at} is beyond the high watermark ${w.high}: the log lost acknowledged records` };
    }
    if (at < w.low) {
      return { ...base, verdict: "OVER_WINDOW", checkpoint: at, lag: w.high - at, lost: { from: at, to: w.low },
        detail: `checkpoint ${at} is behind the low watermark ${w.low}: offsets [${at}, ${w.low}) left the retention window unread` };
    }
    return { ...base, verdict: "OK", checkpoint: at, lag: w.high - at, lost: null, detail: "ok" };
  }

  /** Audits every partition without changing anything (`qimctl dispatch audit`). */
  async audit(): Promise<PartitionAudit[]> {
    return (await this.auditWith(await this.log.storedIdentity())).map((r) => r.audit);
  }

  /** Each partition's audit with the checkpoint and watermarks it was made from (one read of each). */
  private auditWith(stored: DispatchIdentity | null): Promise<{ audit: PartitionAudit; cp: Checkpoint | null; w: Watermarks }[]> {
    return Promise.all(Array.from({ length: this.log.identity.partitionCount }, async (_, p) => {
      const [cp, w] = await Promise.all([this.readCheckpoint(p), this.log.watermarks(p)]);
      const audit = this.verdict(p, cp, w, stored);
      observe(audit);
      return { audit, cp, w };
    }));
  }

  /**
   * Moves a partition the audit did not find OK but recoverable (NO_CHECKPOINT, OVER_WINDOW) to
   * where the consumer continues: the low watermark when records were lost, else the start.
   */
  private recover(a: PartitionAudit, cp: Checkpoint | null, w: Watermarks, fence: Fence): Promise<boolean> {
    // the log is read again from there (another process may have wiped the checkpoints): what the
    // low-latency path wrote before is not taken as written, so the replay projects everything
    this.forgetProjectedAhead();
    return this.advance(a.partition, cp?.raw ?? null, a.lost ? w.lowPosition : LOG_START, fence);
  }

  /** Runs `work` with the partition's fence while this process owns it; null when it does not. */
  private async owned<T>(partition: number, work: (fence: Fence) => Promise<T>): Promise<T | null> {
    const fence = this.gate.enter("partition", partition);
    if (!fence) return null;
    try {
      return await work(fence);
    } finally {
      this.gate.leave("partition", partition);
    }
  }

  /**
   * Start-up: audit, refuse on BEYOND_HIGH / IDENTITY_MISMATCH (nothing is changed then), bump the
   * epoch once when any partition lost records, move those checkpoints to the low watermark,
   * create missing checkpoints, catch up to the high watermarks of that moment (spec 002 §2.2:
   * the consumer serves only once it has caught up), then poll in the background.
   *
   * In a cluster every partition is audited (a refusal anywhere means the log is not ours or lost
   * acknowledged records: no node may serve from it), but only the partitions this node owns are
   * recovered, created and caught up: the others are their owners' (whose polls apply the same
   * verdicts at run time), and a checkpoint written without the partition's lease is refused.
   * The epoch bump stays global: it is decided from every partition's audit, once.
   */
  async start(): Promise<ProjectionStartReport> {
    const stored = await this.log.storedIdentity();
    const results = await this.auditWith(stored);
    const audits = results.map((r) => r.audit);
    if (stored && !sameIdentity(stored, this.log.identity)) {
      for (const a of audits) this.say(`partition ${a.partition} ${a.verdict}: ${a.detail}`);
      throw new ProjectionRefusedError(audits);
    }
    const refused = audits.filter(refusedVerdict);
    // a missing checkpoint over a fully retained log is a first start, not news
    for (const a of audits) if (a.verdict !== "OK" && !(a.verdict === "NO_CHECKPOINT" && !a.lost)) this.say(`partition ${a.partition} ${a.verdict}: ${a.detail}`);
    if (refused.length > 0) throw new ProjectionRefusedError(audits);
    if (!stored) await this.log.ensureIdentity();
    const lost = audits.filter((a) => a.lost !== null);
    let epoch: number;
    if (lost.length > 0) {
      const ranges = lost.map((a) => `p${a.partition}[${a.lost!.from},${a.lost!.to})`).join(" ");
      epoch = (await this.epoch.bump(`start-up audit: records left the retention window unprojected: ${ranges}`, "projection")).epoch;
      this.say(`epoch bumped to ${epoch}; lost ranges ${ranges}; users are rebuilt from the authority on their next list pull`);
    } else {
      epoch = await this.epoch.get();
    }
    await Promise.all(results.filter((r) => r.audit.verdict !== "OK").map((r) => this.owned(r.audit.partition, (fence) => this.recover(r.audit, r.cp, r.w, fence))));
    this.failure = null;
    const caughtUp = await this.catchUp();
    if (caughtUp > 0) this.say(`caught up ${caughtUp} record(s) before serving`);
    this.stopped = this.opts.poll === false;
    this.schedule(this.pollIntervalMs);
    return { audits, epoch, epochBumped: lost.length > 0 };
  }

  private polling = false;
  private again = false;

  /**
   * One background pass at a time: a kick during a pass asks for another pass right after it
   * (kicks coalesce), otherwise the next pass comes after pollIntervalMs.
   */
  private schedule(delay: number): void {
    if (this.stopped) return;
    if (this.polling) {
      if (delay === 0) this.again = true;
      return;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.polling = true;
      this.running = this.catchUp({ oneAtATime: true })
        .catch((err: unknown) => this.opts.onError?.(err))
        .finally(() => {
          this.polling = false;
          const next = this.again ? 0 : this.pollIntervalMs;
          this.again = false;
          if (!this.failure) this.schedule(next);
        });
    }, delay);
  }

  /** Polls soon (the low-latency path calls this when its write failed). */
  kick(): void {
    if (!this.stopped && !this.failure) this.schedule(0);
  }

  /**
   * Polls every partition until each is caught up with its high watermark; returns records applied.
   * `oneAtATime` (the background polls) takes one batch of one partition at a time, round robin:
   * all of them at once handled every partition's reply in one stretch of the event loop (tens of
   * ms in bench/admin, every poll), which every request arriving meanwhile waited for; and one
   * partition after another would let a busy partition hold back the others. A partition that
   * fails does not stop the others; the first failure is thrown once all are done.
   */
  async catchUp(opts: { oneAtATime?: boolean } = {}): Promise<number> {
    let total = 0;
    let firstError: unknown;
    let pending = Array.from({ length: this.log.identity.partitionCount }, (_, p) => p).filter((p) => this.gate.owns("partition", p));
    const step = async (p: number): Promise<boolean> => {
      if (this.failure) throw this.failure;
      try {
        const n = await this.pollPartition(p);
        total += n;
        return n >= this.batchSize;
      } catch (err) {
        firstError ??= err;
        return false;
      }
    };
    while (pending.length > 0) {
      const more: number[] = [];
      if (opts.oneAtATime) {
        for (const p of pending) if (await step(p)) more.push(p);
      } else {
        const again = await Promise.all(pending.map(step));
        pending.forEach((p, i) => { if (again[i]) more.push(p); });
      }
      pending = more;
    }
    if (firstError !== undefined) throw firstError;
    return total;
  }

  /** One step on one partition (serialized per partition within this process). */
  pollPartition(partition: number): Promise<number> {
    const prev = this.partitionLocks.get(partition) ?? Promise.resolve(0);
    const run = () => this.pollOnce(partition);
    const next = prev.then(run, run);
    this.partitionLocks.set(partition, next);
    void next.finally(() => { if (this.partitionLocks.get(partition) === next) this.partitionLocks.delete(partition); }).catch(() => {});
    return next;
  }

  private async pollOnce(partition: number): Promise<number> {
    return (await this.owned(partition, (fence) => this.pollOwned(partition, fence))) ?? 0;
  }

  private async pollOwned(partition: number, fence: Fence): Promise<number> {
    const cp = await this.pollCheckpoint(partition);
    const { watermarks: w, entries } = cp ? await this.log.readFrom(partition, cp.position, this.batchSize) : { watermarks: await this.log.watermarks(partition), entries: [] };
    // the same verdicts as the audit; at runtime each partition's loss bumps the epoch on its own
    const a = this.verdict(partition, cp, w, null);
    observe(a);
    if (refusedVerdict(a)) return this.fail(partition, a.detail);
    if (a.verdict !== "OK") {
      if (a.lost) {
        const bump = await this.epoch.bump(`partition ${partition}: ${a.detail}`, "projection");
        this.say(a.verdict === "NO_CHECKPOINT"
          ? `partition ${partition} NO_CHECKPOINT with low watermark ${w.low}: epoch bumped to ${bump.epoch}, continuing from ${w.low}`
          : `partition ${partition} OVER_WINDOW: lost [${a.lost.from}, ${a.lost.to}); epoch bumped to ${bump.epoch}`);
      }
      await this.recover(a, cp, w, fence);
      return 0;
    }
    if (entries.length === 0) return 0;
    // what the low-latency path already wrote is not written again (it is forgotten here either
    // way: should the checkpoint not move, the next step projects it)
    const todo = entries.map((e) => e.record).filter((r) => !this.projectedAhead.delete(dispatchRecordKey(r)));
    if (todo.length > 0) await this.writer.project(todo);
    const last = entries[entries.length - 1]!;
    // all recipients are written; only now may the checkpoint move past these records
    if (!(await this.advance(partition, cp!.raw, { offset: last.offset + 1, id: last.id }, fence))) return 0;
    metrics.projectedRecords.inc({ path: "durable" }, todo.length);
    metrics.consumedRecords.inc(entries.length);
    return entries.length;
  }

  private fail(partition: number, why: string): number {
    this.failure = new FailedPreconditionError(`session projection stopped on partition ${partition}: ${why}`, { partition });
    this.say(this.failure.message);
    this.opts.onError?.(this.failure);
    return 0;
  }

  /** The low-latency path: project records right after they were appended (same script). */
  async projectRecords(records: readonly DispatchRecord[]): Promise<number> {
    const generation = this.generation;
    const n = await this.writer.project(records);
    metrics.projectedRecords.inc({ path: "low_latency" }, records.length);
    if (generation === this.generation) {
      for (const r of records) {
        if (this.projectedAhead.size >= PROJECTED_AHEAD_MAX) this.projectedAhead.delete(this.projectedAhead.values().next().value!);
        this.projectedAhead.add(dispatchRecordKey(r));
      }
    }
    return n;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running.catch(() => {});
    await Promise.all([...this.partitionLocks.values()].map((p) => p.catch(() => 0)));
  }
}
