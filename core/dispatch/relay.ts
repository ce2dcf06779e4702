import { bucketTag, COMMIT_BUCKET_COUNT, FANOUT_CHUNK_RECIPIENTS, hexToUuid, InternalError, type KeySpace } from "../base/index.js";
import { leaseHolds, SOLO_GATE, unitLeaseKey, type Fence, type UnitGate } from "../cluster/index.js";
import { anchorEventSeqOf, applyAnchorEventScript, conversationKeys, outboxKey, reactionWhoKey } from "../conversation/index.js";
import type { RedisStore } from "../store/index.js";
import { failpoint, failpointStop, FAILPOINTS } from "../support/index.js";
import { bucketConversationsKey, fanoutKeys } from "./keys.js";
import { MEMBERS_RECORD_CHUNK, type DispatchLog, type DispatchRecord } from "./log.js";
import { metrics } from "./metrics.js";
import { expandAudienceScript, loadForDispatchScript, markCommittedScript, saveFanoutProgressScript } from "./scripts.js";

/**
 * Fanout steps (each one Redis call within the member budget, one append and one progress save)
 * a bucket's jobs get per turn before the relay lets the bucket's outbox and the other buckets
 * have theirs: about ten milliseconds of work, so a small group's send committed into the same
 * bucket during a 1,000,000-member fanout waits about that long, while the lock hand-over and the
 * lease read between turns stay a small part of the job's time.
 */
export const FANOUT_CHUNKS_PER_PASS = 8;

export interface RelayOptions {
  /** Outbox entries taken from one bucket per pass. */
  batchSize?: number;
  /**
   * The most recipients one dispatch record carries and members one fanout step reads; above it a
   * group's seqs go through fanout jobs. Default FANOUT_CHUNK_RECIPIENTS (tests lower it).
   */
  fanoutChunkRecipients?: number;
  /** Fanout steps per bucket per turn; default FANOUT_CHUNKS_PER_PASS. */
  fanoutChunksPerPass?: number;
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
 * Conversations a relay remembers having put in their bucket's directory (the ZADD NX before a
 * drain's marks): past it the memory is dropped and the next drains write their entries once more.
 */
export const DIRECTORY_LISTED_MAX = 100_000;

/**
 * The outbox relay (DESIGN §2 step 4): moves RECORDED commits into the dispatch log, then marks
 * them COMMITTED. The append happens before the mark, so a crash between the two appends the
 * same commit again on resume: delivery is at-least-once and consumers are idempotent by
 * (conversation, seq) / message id. Nothing is marked COMMITTED that is not in the log or in a
 * fanout job.
 *
 * Fanout jobs (issue 22): a seq whose audience may exceed the member budget (and every later seq
 * of its conversation while it waits) is not appended from the outbox but handed to the bucket's
 * durable job queue by the same markCommitted, so that the bucket's other conversations never wait
 * behind it. The jobs are expanded chunk by chunk (expandAudience, one chunk of at most
 * `fanoutChunkRecipients` recipients per record, chunks 0, 1, 2 …), each chunk appended before its
 * progress is saved (at-least-once again), under the same bucket lock and lease as the outbox, at
 * most `fanoutChunksPerPass` steps per turn of the bucket.
 */
export class OutboxRelay {
  private readonly batchSize: number;
  private readonly chunkRecipients: number;
  private readonly chunksPerPass: number;
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
    this.chunkRecipients = opts.fanoutChunkRecipients ?? FANOUT_CHUNK_RECIPIENTS;
    this.chunksPerPass = opts.fanoutChunksPerPass ?? FANOUT_CHUNKS_PER_PASS;
    this.gate = opts.gate ?? SOLO_GATE;
  }

  /** Runs `work` on the bucket after every earlier piece of work on it: kicks, sweeps and fanout turns never overlap. */
  private withBucket<T>(bucket: number, work: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(bucket) ?? Promise.resolve();
    const next = prev.then(work, work);
    this.locks.set(bucket, next);
    void next.finally(() => { if (this.locks.get(bucket) === next) this.locks.delete(bucket); }).catch(() => {});
    return next;
  }

  /**
   * Relays up to one batch of one bucket's outbox; returns how many entries it consumed (0 when
   * this process does not own the bucket). Calls for one bucket run one after another, so a kick
   * and a sweep never append the same entry twice.
   */
  drainBucket(bucket: number): Promise<number> {
    return this.withBucket(bucket, () => this.drainBucketOnce(bucket));
  }

  /**
   * One turn of the bucket's fanout jobs: at most `fanoutChunksPerPass` steps of its head jobs
   * (each appends a chunk and saves its progress); returns the steps done (0 when there is no job,
   * or this process does not own the bucket). Between turns the bucket's lock is free for its
   * outbox (kicks) and the relay turns to other buckets.
   */
  fanoutBucket(bucket: number): Promise<number> {
    return this.withBucket(bucket, async () => {
      const fence = this.gate.enter("relay", bucket);
      if (!fence) return 0;
      try {
        return await this.fanoutOwned(bucket, fence);
      } finally {
        this.gate.leave("relay", bucket);
      }
    });
  }

  private readonly locks = new Map<number, Promise<unknown>>();
  /** Buckets whose jobs a kick's worker is working through (one worker per bucket, not one per kick). */
  private readonly fanoutWorkers = new Set<number>();
  /** Buckets where this process queued fanout jobs that no worker has taken up yet. */
  private readonly fanoutQueued = new Set<number>();
  private readonly kicked = new Set<number>();
  private kickScheduled = false;
  private lowLatencyInflight = 0;
  /** `bucket|tenant|conversation` this relay has written into its bucket's directory (bounded by DIRECTORY_LISTED_MAX). */
  private readonly listed = new Set<string>();
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
    // only after this process queued a job there: a kick costs no extra read otherwise (the sweep
    // finds the jobs other processes queued)
    if (this.fanoutQueued.has(bucket)) await this.fanoutUntilEmpty(bucket);
  }

  /**
   * Works the bucket's fanout jobs turn after turn until none is left (or the relay stops, or the
   * bucket is not ours, or a turn got nowhere: fenced), one worker per bucket: the kicks of a busy
   * bucket's small sends only drain its outbox, each between two turns.
   */
  private async fanoutUntilEmpty(bucket: number): Promise<void> {
    if (this.fanoutWorkers.has(bucket)) return;
    this.fanoutWorkers.add(bucket);
    this.fanoutQueued.delete(bucket);
    try {
      while (!this.stopped && this.gate.owns("relay", bucket) && (await this.fanoutBucket(bucket)) > 0);
    } finally {
      this.fanoutWorkers.delete(bucket);
    }
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
    const fanout = fanoutKeys(this.keys, bucket);
    let fencedOut = false;
    const byConversation = new Map<string, string[]>();
    for (const e of raw) {
      const cut = e.lastIndexOf("|");
      const ref = e.slice(0, cut);
      const list = byConversation.get(ref);
      if (list) list.push(e.slice(cut + 1)); else byConversation.set(ref, [e.slice(cut + 1)]);
    }
    // the bucket's directory of conversations (per-bucket tasks such as retention walk it), before
    // any mark; only for conversations this relay has not written there yet, so a busy
    // conversation's drains cost no extra round trip (nothing removes a directory entry)
    const unlisted = [...byConversation.keys()].filter((ref) => !this.listed.has(`${bucket}|${ref}`));
    if (unlisted.length > 0) {
      await client.zadd(bucketConversationsKey(this.keys, bucket), "NX", ...unlisted.flatMap((ref) => [0, ref]));
      if (this.listed.size + unlisted.length > DIRECTORY_LISTED_MAX) this.listed.clear();
      for (const ref of unlisted) this.listed.add(`${bucket}|${ref}`);
    }
    await Promise.all([...byConversation].map(async ([ref, seqs]) => {
      const [tenantHex, convHex] = ref.split("|") as [string, string];
      const tenant = hexToUuid(tenantHex);
      const conversation = hexToUuid(convHex);
      const k = { ...conversationKeys(this.keys, tenant, conversation), ...fanout };
      let loaded;
      try {
        loaded = await loadForDispatchScript.run(client, k, { budget: this.chunkRecipients, outboxRef: ref, seqs });
      } catch (err) {
        throw err instanceof InternalError ? new InternalError(`${err.message} (${ref})`) : err;
      }
      const records: DispatchRecord[] = [];
      const dispatched: string[] = [];
      const toJobs: string[] = [];
      // a recall's or an edit's event: its target's state before the event leaves (spec 003 §2.3,
      // C-5): the call that wrote the event may have died between its two steps; step 2 is idempotent
      for (const c of loaded) {
        const target = c.entry === "" ? null : anchorEventSeqOf(c.entry);
        if (target !== null) {
          await applyAnchorEventScript.run(client, { ...k, rxwho: reactionWhoKey(this.keys, tenant, conversation, target) }, { eventSeq: c.conversationSeq, targetSeq: target });
        }
      }
      for (const c of loaded) {
        if (c.action === "fanout") {
          // a group message's job: its devices online get it now, from one members record appended
          // before the mark (issue 27), not after the job's chunks (seconds for a large group)
          if (c.members && c.entry !== "") {
            records.push({ tenant, conversation, conversationSeq: c.conversationSeq, entry: c.entry, version: c.version, recipients: [], chunk: MEMBERS_RECORD_CHUNK, push: "members" });
            toJobs.push(`${c.conversationSeq}|m`);
          } else {
            toJobs.push(String(c.conversationSeq));
          }
          continue;
        }
        dispatched.push(String(c.conversationSeq));
        if (c.action === "dispatch") records.push({ tenant, conversation, conversationSeq: c.conversationSeq, entry: c.entry, version: c.version, recipients: c.recipients, recipientsHex: c.recipientsHex, chunk: 0 });
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
      const marked = await markCommittedScript.run(client, { ...k, lease }, { owner: fence.owner, token: fence.token, outboxRef: ref, dispatched, toJobs });
      if (marked === null) {
        fencedOut = true;
        this.gate.refused("relay", bucket, "mark_committed", fence);
        this.markRefusedWithoutCluster(bucket);
        return;
      }
      // commits dispatched: a members record announces a commit its fanout job dispatches
      metrics.relayDispatched.inc(records.filter((r) => r.push !== "members").length);
      if (marked.queued > 0) {
        metrics.fanoutJobsQueued.inc(marked.queued);
        this.fanoutQueued.add(bucket);
      }
    }));
    return fencedOut ? 0 : raw.length;
  }

  /**
   * Up to `chunksPerPass` steps of the bucket's head fanout jobs: expand the next chunk (one call
   * reading at most `chunkRecipients` members), append it, save the progress (fenced, a
   * compare-and-set on the step). Returns the steps done.
   */
  private async fanoutOwned(bucket: number, fence: Fence): Promise<number> {
    const client = this.store.clientFor(bucketTag(bucket));
    const fanout = fanoutKeys(this.keys, bucket);
    const lease = unitLeaseKey(this.keys, "relay", bucket);
    let steps = 0;
    // the lease is read once per turn, not per chunk: every step's progress save is fenced, so a
    // node whose lease moved mid-turn appends at most this turn's chunks again (at-least-once)
    let leaseChecked = false;
    while (steps < this.chunksPerPass) {
      const job = await client.lindex(fanout.fanoutJobs, 0);
      if (job === null) break;
      const cut = job.lastIndexOf("|");
      const [tenantHex, convHex] = job.slice(0, cut).split("|") as [string, string];
      const seq = Number(job.slice(cut + 1));
      const tenant = hexToUuid(tenantHex);
      const conversation = hexToUuid(convHex);
      const step = await expandAudienceScript.run(client, { ...conversationKeys(this.keys, tenant, conversation), ...fanout }, { job, count: this.chunkRecipients });
      // markCommitted writes a job and its state in one step and saveFanoutProgress drops them in one
      if (!step) throw new InternalError(`fanout job ${job} of relay bucket ${bucket} has no state`);
      if (step.entry === "") throw new InternalError(`fanout job ${job} of relay bucket ${bucket}: history has no entry at seq ${seq}`);
      // HSCAN's COUNT is a hint (it returns whole hash buckets): a record never carries more than the chunk size
      const records: DispatchRecord[] = [];
      for (let i = 0; i < step.recipients.length; i += this.chunkRecipients) {
        const record: DispatchRecord = { tenant, conversation, conversationSeq: seq, entry: step.entry, version: step.version,
          recipients: step.recipients.slice(i, i + this.chunkRecipients), chunk: step.chunk + records.length };
        if (step.pushed) record.push = "none";
        records.push(record);
      }
      if (records.length > 0) {
        if (!leaseChecked && !(await this.leaseHolds(bucket, fence))) break;
        leaseChecked = true;
        await this.log.append(records);
        if (this.opts.onAppended) this.handOff(this.opts.onAppended, records);
        metrics.fanoutChunks.inc(records.length);
        metrics.fanoutRecipients.inc(step.recipients.length);
        failpoint(FAILPOINTS.relayFanoutBeforeProgress);
      }
      const saved = await saveFanoutProgressScript.run(client, { ...fanout, lease }, {
        owner: fence.owner, token: fence.token, job, cursor: step.cursor, chunk: step.chunk, nextCursor: step.nextCursor, nextChunk: step.chunk + records.length,
      });
      if (saved === "fenced") {
        this.gate.refused("relay", bucket, "fanout_progress", fence);
        this.markRefusedWithoutCluster(bucket);
        break;
      }
      // under the bucket's lock and lease nobody else moves the job: never expected, and never looped on
      if (saved === "moved") break;
      steps++;
      if (saved === "done") metrics.fanoutJobsDone.inc();
    }
    return steps;
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

  /**
   * One pass over every owned bucket until its outbox and its fanout jobs are empty; returns the
   * outbox entries relayed. Each round gives every bucket with work one outbox batch and one fanout
   * turn, and looks at every owned bucket again: a big fanout in one bucket, which keeps the pass
   * going for many rounds, never holds up the other buckets' outboxes, also those filled meanwhile
   * by other processes' commits (which no kick announces).
   */
  async drainAll(): Promise<number> {
    let total = 0;
    const buckets = Array.from({ length: COMMIT_BUCKET_COUNT }, (_, b) => b);
    // buckets that got nowhere in a round (fenced out) are done for this pass: never loop on them
    const stuck = new Set<number>();
    for (;;) {
      const owned = buckets.filter((b) => !stuck.has(b) && this.gate.owns("relay", b));
      if (owned.length === 0) break;
      const lengths = await this.store.listLengths([...owned.map((b) => outboxKey(this.keys, b)), ...owned.map((b) => fanoutKeys(this.keys, b).fanoutJobs)]);
      const turns = owned.map((b, i) => ({ b, outbox: lengths[i]!, jobs: lengths[owned.length + i]! })).filter((t) => t.outbox > 0 || t.jobs > 0);
      if (turns.length === 0) break;
      const done = await Promise.all(turns.map(async (t) => {
        const relayed = t.outbox > 0 ? await this.drainBucket(t.b) : 0;
        const steps = t.jobs > 0 ? await this.fanoutBucket(t.b) : 0;
        return { relayed, steps };
      }));
      total += done.reduce((a, d) => a + d.relayed, 0);
      turns.forEach((t, i) => { if (done[i]!.relayed === 0 && done[i]!.steps === 0) stuck.add(t.b); });
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
