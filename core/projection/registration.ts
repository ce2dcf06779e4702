import { decodeRegistration, type ConversationStateAuthority, type RegistrationItem } from "./authority.js";
import { COMMIT_BUCKET_COUNT } from "../base/index.js";
import type { KeySpace } from "../base/index.js";
import { ucsDeadKey, ucsPendingKey } from "./keys.js";
import { deadLetterRegistrationScript, popRegisteredScript } from "./scripts.js";
import { metrics } from "./metrics.js";
import type { RedisStore } from "../store/index.js";
import { SOLO_GATE, unitLeaseKey, type Fence, type UnitGate } from "../cluster/index.js";

/** A Redis instance's registration queues: items pending, and dead letters kept (ucs_dead). */
export interface QueueDepth {
  instance: number;
  depth: number;
  deadLetters: number;
}

/** Dead letters kept per user bucket (the oldest are dropped beyond this). */
export const DEAD_LETTERS_KEPT = 1000;

export interface RegistrationOptions {
  /** Items read from the head of one queue per step. */
  batchSize?: number;
  intervalMs?: number;
  onError?: (err: unknown) => void;
  /**
   * Runs after the authority accepted a batch and before its items are popped. Tests use it to
   * kill the process at the worst moment; nothing else should.
   */
  afterAuthorityWrite?: (items: RegistrationItem[]) => Promise<void> | void;
  /**
   * Which user slots this process owns and the fence its pops carry (core/cluster): the owner of
   * user slot u does the registration work of user bucket u. Default: every slot, token 0.
   */
  gate?: UnitGate;
}

/**
 * The registration task (ADR-0021 §4): reads pending registrations from the head of each user
 * bucket's `ucs_pending` queue, writes them to the authority in one batch, then pops exactly the
 * heads equal to what it wrote (lua/popRegistered-1.lua). A crash between the write and the pop
 * writes the same items again on the next pass, which the authority absorbs; several tasks on
 * several servers may run at once.
 */
export class RegistrationTask {
  private readonly batchSize: number;
  private readonly gate: UnitGate;
  private stopped = true;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly store: RedisStore,
    private readonly keys: KeySpace,
    readonly authority: ConversationStateAuthority,
    private readonly opts: RegistrationOptions = {},
  ) {
    this.batchSize = opts.batchSize ?? 256;
    this.gate = opts.gate ?? SOLO_GATE;
  }

  /**
   * One batch from one user bucket's queue; returns the items popped. The batch stops before the
   * first item that cannot be decoded; at the head, such an item is moved to the bucket's
   * dead-letter list (lua/deadLetterRegistration-2.lua), reported through onError, and counted,
   * so one bad entry never blocks the registrations queued behind it.
   */
  async drainBucket(bucket: number): Promise<number> {
    const fence = this.gate.enter("slot", bucket);
    if (!fence) return 0;
    try {
      return await this.drainOwnedBucket(bucket, fence);
    } finally {
      this.gate.leave("slot", bucket);
    }
  }

  private async drainOwnedBucket(bucket: number, fence: Fence): Promise<number> {
    const key = ucsPendingKey(this.keys, bucket);
    const client = this.store.clientForKey(key);
    let raw = await client.lrange(key, 0, this.batchSize - 1);
    if (raw.length === 0) return 0;
    const items: RegistrationItem[] = [];
    for (const [i, text] of raw.entries()) {
      try {
        items.push(decodeRegistration(text));
      } catch (err) {
        if (i > 0) {
          raw = raw.slice(0, i); // register the good prefix now; the bad item is the head next time
          break;
        }
        const dead = ucsDeadKey(this.keys, bucket);
        const moved = await deadLetterRegistrationScript.run(client, { pending: key, dead }, { item: text, keep: DEAD_LETTERS_KEPT });
        if (moved) {
          metrics.ucsDeadLettered.inc();
          this.opts.onError?.(new Error(`registration: moved an undecodable item from ${key} to ${dead}: ${(err as Error).message}`));
        }
        return moved ? 1 : 0;
      }
    }
    try {
      await this.authority.register(items);
    } catch (err) {
      metrics.ucsFailures.inc();
      throw err;
    }
    await this.opts.afterAuthorityWrite?.(items);
    const popped = await popRegisteredScript.run(client, { pending: key, lease: unitLeaseKey(this.keys, "slot", bucket) }, { owner: fence.owner, token: fence.token, items: raw });
    if (popped === null) {
      this.gate.refused("slot", bucket, "pop_registered", fence);
      return 0;
    }
    metrics.ucsWritten.inc(popped);
    return popped;
  }

  /** Drains every owned queue until empty (or until a pass pops nothing); returns the items popped. */
  async drainAll(): Promise<number> {
    let total = 0;
    let pending = Array.from({ length: COMMIT_BUCKET_COUNT }, (_, b) => b);
    while (pending.length > 0) {
      pending = pending.filter((b) => this.gate.owns("slot", b));
      if (pending.length === 0) break;
      const depths = await this.depthsOf(pending);
      pending = pending.filter((_, i) => depths[i]! > 0);
      if (pending.length === 0) break;
      const done = await Promise.all(pending.map((b) => this.drainBucket(b)));
      const popped = done.reduce((a, n) => a + n, 0);
      total += popped;
      // another task popped what we wrote: go round again, the queues changed under us
      if (popped === 0 && done.length > 0) await new Promise((r) => setTimeout(r, 10));
    }
    return total;
  }

  private depthsOf(buckets: number[]): Promise<number[]> {
    return this.store.listLengths(buckets.map((b) => ucsPendingKey(this.keys, b)));
  }

  /**
   * Queue depth and dead letters summed per Redis instance (index into the configured instances;
   * one entry on a Cluster), read in one pipeline per instance; also their gauges.
   */
  async depthPerInstance(): Promise<QueueDepth[]> {
    const buckets = Array.from({ length: COMMIT_BUCKET_COUNT }, (_, b) => b);
    const lengths = await this.store.listLengths([...buckets.map((b) => ucsPendingKey(this.keys, b)), ...buckets.map((b) => ucsDeadKey(this.keys, b))]);
    const clients = this.store.clients();
    const out: QueueDepth[] = clients.map((_, instance) => ({ instance, depth: 0, deadLetters: 0 }));
    for (const b of buckets) {
      const q = out[clients.indexOf(this.store.clientForKey(ucsPendingKey(this.keys, b)))]!;
      q.depth += lengths[b]!;
      q.deadLetters += lengths[COMMIT_BUCKET_COUNT + b]!;
    }
    for (const q of out) {
      metrics.queueDepth.set({ redis_instance: String(q.instance) }, q.depth);
      metrics.deadLetterQueueDepth.set({ redis_instance: String(q.instance) }, q.deadLetters);
    }
    return out;
  }

  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    const tick = () => {
      if (this.stopped) return;
      this.running = this.drainAll()
        .catch((err: unknown) => this.opts.onError?.(err))
        .finally(() => { if (!this.stopped) this.timer = setTimeout(tick, this.opts.intervalMs ?? 500); });
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running.catch(() => {});
  }
}
