import type { KeySpace } from "../base/index.js";
import { projectionEpochKey, projectionEpochLogKey } from "./keys.js";
import { bumpEpochScript } from "./scripts.js";
import { metrics } from "./metrics.js";
import type { RedisStore } from "../store/index.js";

export interface EpochBump {
  epoch: number;
  reason: string;
  /** Who bumped it: a principal, or "projection" for the consumer's own start-up/runtime audit. */
  by: string;
  at: number;
}

const LOG_KEEP = 100;

/**
 * How long a list pull may use the projection epoch this process last read or bumped (issue 26:
 * every pull read `{g000}`, one key on one Redis node, the hot key of a busy cluster). A bump made
 * here is seen by the next pull at once; a bump on another node within this bound — a user who
 * pulls in between is served the set they had and rebuilt on a pull after it. The explicit reads
 * (rebuild of one user, the consumer's audit, the drill, the admin API) read Redis every time.
 */
export const EPOCH_CACHE_MS = 1000;

/**
 * `session_projection:epoch` (ADR-0021 §4): bumped when the projection may have lost entries
 * (a checkpoint fell behind the retention window, or was lost while the log had been trimmed) or
 * by an operator. A user whose epoch mark is behind gets their list merged back from the
 * authority on their next pull. The newest bumps are kept with their reasons.
 */
export class ProjectionEpoch {
  constructor(private readonly store: RedisStore, private readonly keys: KeySpace, private readonly now: () => number = Date.now) {}

  private client() {
    return this.store.clientForKey(projectionEpochKey(this.keys));
  }

  /** The last epoch read or bumped here and when (this.now()), for current(). */
  private cached: { value: number; at: number } | null = null;
  /** The read current() is waiting for: concurrent pulls share one GET. */
  private reading: Promise<number> | null = null;

  /** The epoch in Redis now. */
  async get(): Promise<number> {
    const v = Number((await this.client().get(projectionEpochKey(this.keys))) ?? "0");
    metrics.projectionEpoch.set(v);
    this.remember(v);
    return v;
  }

  /**
   * The epoch as a list pull uses it: the value read or bumped here less than EPOCH_CACHE_MS ago,
   * else one read shared by every pull that asks meanwhile.
   */
  current(): Promise<number> {
    const c = this.cached;
    if (c !== null && this.now() - c.at < EPOCH_CACHE_MS) return Promise.resolve(c.value);
    this.reading ??= this.get().finally(() => { this.reading = null; });
    return this.reading;
  }

  /** The epoch only grows: a read that started before a bump here and ends after it keeps the bump. */
  private remember(value: number): void {
    if (this.cached === null || value >= this.cached.value) this.cached = { value, at: this.now() };
  }

  /** Increments the epoch and records why, in one atomic step; returns the new epoch. */
  async bump(reason: string, by: string): Promise<EpochBump> {
    const at = this.now();
    const epoch = await bumpEpochScript.run(this.client(), { epoch: projectionEpochKey(this.keys), epochLog: projectionEpochLogKey(this.keys) }, { reason, by, at, keep: LOG_KEEP });
    metrics.projectionEpoch.set(epoch);
    this.remember(epoch);
    return { epoch, reason, by, at };
  }

  /** The newest bumps, newest first. */
  async history(limit = 10): Promise<EpochBump[]> {
    const raw = await this.client().lrange(projectionEpochLogKey(this.keys), 0, Math.max(0, limit - 1));
    return raw.map((r) => JSON.parse(r) as EpochBump);
  }
}
