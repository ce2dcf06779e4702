import { bucketTag, COMMIT_BUCKET_COUNT, hexToUuid, InternalError, type KeySpace } from "../base/index.js";
import { leaseHolds, SOLO_GATE, unitLeaseKey, type Fence, type UnitGate } from "../cluster/index.js";
import { conversationKeys, outboxKey } from "../conversation/index.js";
import type { RedisStore } from "../store/index.js";
import { failpointStop, FAILPOINTS } from "../support/index.js";
import type { DispatchLog, DispatchRecord } from "./log.js";
import { metrics } from "./metrics.js";
import { loadForDispatchScript, markCommittedScript } from "./scripts.js";

export interface RelayOptions {
  /** Outbox entries taken from one bucket per pass. */
  batchSize?: number;
  onError?: (err: unknown) => void;
  /**
   * Called with records right after they were appended to the dispatch log (before they are marked
   * COMMITTED): the session projection's low-latency path. Its failures go to onError and never
   * hold up the relay; the durable consumer applies the same records from the log anyway.
   */
  onAppended?: (records: DispatchRecord[]) => Promise<unknown> | void;
  /**
   * Which buckets this process owns and the fence its marks carry (core/cluster); default: every
   * bucket, token 0 (no cluster). Buckets not owned are skipped by sweeps and kicks.
   */
  gate?: UnitGate;
}

/**
 * onAppended calls in flight at most: beyond, a batch is not handed to the low-latency path (and
 * counted), so a slow store cannot pile projections up in memory; the durable consumer projects
 * it from the log anyway.
 */
export const LOW_LATENCY_MAX_INFLIGHT = 8;

/**
 * The outbox relay (DESIGN §2 step 4): moves RECORDED commits into the dispatch log, then marks
 * them COMMITTED. The append happens before the mark, so a crash between the two appends the
 * same commit again on resume: delivery is at-least-once and consumers are idempotent by
 * (conversation, seq) / message id. Nothing is marked COMMITTED that is not in the log.
 */
export class OutboxRelay {
  private readonly batchSize: number;
  private readonly gate: UnitGate;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> = Promise.resolve();
  private stopped = true;

  constructor(
    private readonly store: RedisStore,
    private readonly keys: KeySpace,
    private readonly log: DispatchLog,
    private readonly opts: RelayOptions = {},
  ) {
    this.batchSize = opts.batchSize ?? 256;
    this.gate = opts.gate ?? SOLO_GATE;
  }

  /**
   * Relays up to one batch of one bucket's outbox; returns how many entries it consumed (0 when
   * this process does not own the bucket). Calls for one bucket run one after another, so a kick
   * and a sweep never append the same entry twice.
   */
  drainBucket(bucket: number): Promise<number> {
    const prev = this.locks.get(bucket) ?? Promise.resolve(0);
    const run = () => this.drainBucketOnce(bucket);
    const next = prev.then(run, run);
    this.locks.set(bucket, next);
    void next.finally(() => { if (this.locks.get(bucket) === next) this.locks.delete(bucket); }).catch(() => {});
    return next;
  }

  private readonly locks = new Map<number, Promise<number>>();
  private readonly kicked = new Set<number>();
  private kickScheduled = false;
  private lowLatencyInflight = 0;
  /**
   * Buckets whose mark a relay without a cluster saw refused: a node of an engine cluster holds
   * their lease (this relay runs on a key space a cluster works on). Each later pass checks the
   * lease before appending instead of appending the same batch again; see leaseHolds.
   */
  private readonly foreign = new Set<number>();

  /**
   * The low-latency path: a writer in this process just committed into `bucket`. Kicks coalesce
   * and are drained on the next turn of the event loop, so the periodic sweep (for commits of
   * other processes and for recovery) can run rarely.
   */
  kick(bucket: number): void {
    if (this.stopped) return;
    this.kicked.add(bucket);
    if (this.kickScheduled) return;
    this.kickScheduled = true;
    setImmediate(() => {
      this.kickScheduled = false;
      const buckets = [...this.kicked];
      this.kicked.clear();
      for (const b of buckets) {
        const p: Promise<void> = this.drainUntilEmpty(b)
          .catch((err: unknown) => this.opts.onError?.(err))
          .finally(() => this.pendingKicks.delete(p));
        this.pendingKicks.add(p);
      }
    });
  }

  private async drainUntilEmpty(bucket: number): Promise<void> {
    while (!this.stopped && this.gate.owns("relay", bucket) && (await this.drainBucket(bucket)) >= this.batchSize);
  }

  private readonly pendingKicks = new Set<Promise<unknown>>();

  private async drainBucketOnce(bucket: number): Promise<number> {
    const fence = this.gate.enter("relay", bucket);
    if (!fence) return 0;
    try {
      return await this.drainOwnedBucket(bucket, fence);
    } finally {
      this.gate.leave("relay", bucket);
    }
  }

  /**
   * The lease is checked right before the append, and the mark is fenced inside its script. The
   * append itself is on the partition's tag, so no script can fence it next to the lease: a node
   * woken after its lease moved appends at most the batch it was in the middle of (docs/cluster.md).
   */
  private async leaseHolds(bucket: number, fence: Fence): Promise<boolean> {
    // without a cluster no lease is read, unless a refused mark showed that a node holds this one
    if (!this.gate.fenced && !this.foreign.has(bucket)) return true;
    if (await leaseHolds(this.store, this.keys, "relay", bucket, fence)) {
      this.foreign.delete(bucket);
      return true;
    }
    this.gate.refused("relay", bucket, "append", fence);
    return false;
  }

  /**
   * A mark refused to a relay without a cluster: the bucket's lease names a node of an engine
   * cluster, so nothing this relay appends there can ever be marked. Said once per bucket (the
   * operator started a relay on a cluster's key space); from now on the lease is read before
   * appending, so the batch is not appended again at every pass.
   */
  private markRefusedWithoutCluster(bucket: number): void {
    if (this.gate.fenced || this.foreign.has(bucket)) return;
    this.foreign.add(bucket);
    this.opts.onError?.(new InternalError(
      `relay bucket ${bucket} is leased by a node of an engine cluster and this relay is not one of its nodes: its entries stay for that node ` +
      `(run this process as a node of the cluster, or on a key prefix of its own)`));
  }

  private async drainOwnedBucket(bucket: number, fence: Fence): Promise<number> {
    const client = this.store.clientFor(bucketTag(bucket));
    const raw = await client.lrange(outboxKey(this.keys, bucket), 0, this.batchSize - 1);
    if (raw.length === 0) return 0;
    const lease = unitLeaseKey(this.keys, "relay", bucket);
    let fencedOut = false;
    const byConversation = new Map<string, string[]>();
    for (const e of raw) {
      const cut = e.lastIndexOf("|");
      const ref = e.slice(0, cut);
      const list = byConversation.get(ref);
      if (list) list.push(e.slice(cut + 1)); else byConversation.set(ref, [e.slice(cut + 1)]);
    }
    await Promise.all([...byConversation].map(async ([ref, seqs]) => {
      const [tenantHex, convHex] = ref.split("|") as [string, string];
      const tenant = hexToUuid(tenantHex);
      const conversation = hexToUuid(convHex);
      const k = conversationKeys(this.keys, tenant, conversation);
      let loaded;
      try {
        loaded = await loadForDispatchScript.run(client, k, { seqs });
      } catch (err) {
        throw err instanceof InternalError ? new InternalError(`${err.message} (${ref})`) : err;
      }
      const records: DispatchRecord[] = [];
      for (const c of loaded) {
        if (c.entry === null) continue;
        records.push({ tenant, conversation, conversationSeq: c.conversationSeq, entry: c.entry, version: c.version, recipients: c.recipients });
      }
      if (records.length > 0) {
        if (fencedOut || !(await this.leaseHolds(bucket, fence))) {
          fencedOut = true;
          return;
        }
        await this.log.append(records);
        if (this.opts.onAppended) this.handOff(this.opts.onAppended, records);
      }
      if (records.length > 0) failpointStop(FAILPOINTS.relayBeforeMark);
      const marked = await markCommittedScript.run(client, { ...k, lease }, { owner: fence.owner, token: fence.token, outboxRef: ref, seqs });
      if (marked === null) {
        fencedOut = true;
        this.gate.refused("relay", bucket, "mark_committed", fence);
        this.markRefusedWithoutCluster(bucket);
        return;
      }
      metrics.relayDispatched.inc(records.length);
    }));
    return fencedOut ? 0 : raw.length;
  }

  /** Hands appended records to the low-latency path without waiting for it, at most LOW_LATENCY_MAX_INFLIGHT at a time. */
  private handOff(onAppended: NonNullable<RelayOptions["onAppended"]>, records: DispatchRecord[]): void {
    if (this.lowLatencyInflight >= LOW_LATENCY_MAX_INFLIGHT) {
      metrics.lowLatencySkipped.inc(records.length);
      return;
    }
    this.lowLatencyInflight++;
    void Promise.resolve()
      .then(() => onAppended(records))
      .catch((err: unknown) => this.opts.onError?.(err))
      .finally(() => { this.lowLatencyInflight--; });
  }

  /** One pass over every owned bucket's outbox until each is empty; returns the entries relayed. */
  async drainAll(): Promise<number> {
    let total = 0;
    const buckets = Array.from({ length: COMMIT_BUCKET_COUNT }, (_, b) => b);
    let pending = buckets.filter((b) => this.gate.owns("relay", b));
    while (pending.length > 0) {
      pending = pending.filter((b) => this.gate.owns("relay", b));
      if (pending.length === 0) break;
      const lengths = await this.store.listLengths(pending.map((b) => outboxKey(this.keys, b)));
      pending = pending.filter((_, i) => lengths[i]! > 0);
      const done = await Promise.all(pending.map((b) => this.drainBucket(b)));
      total += done.reduce((a, n) => a + n, 0);
      // a bucket that consumed nothing (fenced out) is done for this pass: never loop on it
      pending = pending.filter((_, i) => done[i]! > 0);
    }
    return total;
  }

  /** Sweeps every bucket in the background every intervalMs until stop(); kicks work meanwhile. */
  start(intervalMs = 1000): void {
    if (!this.stopped) return;
    this.stopped = false;
    const tick = () => {
      if (this.stopped) return;
      this.running = this.drainAll()
        .catch((err) => this.opts.onError?.(err))
        .finally(() => { if (!this.stopped) this.timer = setTimeout(tick, intervalMs); });
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
    await Promise.all([...this.pendingKicks]);
  }
}
