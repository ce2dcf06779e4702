/**
 * Token buckets: a rate (tokens per second) and a burst (the most tokens held). A take either gets
 * a token or says how long until one is there. Kept as one time (the generic cell rate algorithm),
 * so an idle bucket costs nothing and needs no timer. Used by the client gateway's flood limits (per_user_msg_rate of spec
 * 003, read marks, requests, failed upgrades per address) and meant for the ones that come next
 * (room_msg_rate, per_user_reaction_rate).
 */

export interface RateLimit {
  /** Tokens per second (> 0). */
  rate: number;
  /** The most tokens a bucket holds (≥ 1): how many takes may come at once after a quiet while. */
  burst: number;
}

export type Clock = () => number;

export class TokenBucket {
  /** ms a token takes to come back. */
  private readonly interval: number;
  /**
   * The generic cell rate algorithm's theoretical arrival time: the bucket is full when it is not
   * after now, and each take moves it one interval on. One number and no refill arithmetic, so no
   * rounding builds up however often a refused client asks.
   */
  private tat: number;

  constructor(private readonly limit: RateLimit, private readonly now: Clock = Date.now) {
    if (!(limit.rate > 0) || !(limit.burst >= 1)) throw new RangeError(`a rate limit needs rate > 0 and burst ≥ 1, not ${limit.rate}/${limit.burst}`);
    this.interval = 1000 / limit.rate;
    this.tat = now();
  }

  /** Takes one token: 0 when it got one, else the ms until one is there (nothing taken). */
  take(): number {
    const t = this.now();
    const w = this.waitAt(t);
    if (w === 0) this.tat = Math.max(this.tat, t) + this.interval;
    return w;
  }

  /** 0 when a token is there, else the ms until one is (nothing taken). */
  wait(): number {
    return this.waitAt(this.now());
  }

  private waitAt(t: number): number {
    const allowedFrom = Math.max(this.tat, t) + this.interval - this.limit.burst * this.interval;
    return t >= allowedFrom ? 0 : Math.max(1, Math.ceil(allowedFrom - t));
  }

  /** Whether the bucket is full again: it would behave like a new one (and may be forgotten). */
  full(): boolean {
    return this.tat <= this.now();
  }
}

/**
 * One bucket per key (a user, an address), made on first use. Bounded: a bucket that has refilled
 * is the same as a new one, so the ones that are full are dropped whenever the map passes
 * `sweepAbove` keys (and at most once per `sweepEveryMs`); memory follows the keys active within
 * about burst / rate seconds, not every key ever seen.
 */
export class KeyedRateLimiter {
  private readonly buckets = new Map<string, TokenBucket>();
  private lastSweep = 0;

  constructor(
    private readonly limit: RateLimit,
    private readonly opts: { sweepAbove?: number; sweepEveryMs?: number; now?: Clock } = {},
  ) {
    new TokenBucket(limit); // checks the limit once, here
  }

  /** Takes one token of `key`'s bucket: 0 when it got one, else the ms until one is there. */
  take(key: string): number {
    let b = this.buckets.get(key);
    if (!b) {
      this.sweep();
      b = new TokenBucket(this.limit, this.opts.now);
      this.buckets.set(key, b);
    }
    return b.take();
  }

  /** 0 when `key` has a token (or no bucket yet), else the ms until it has one; nothing taken. */
  wait(key: string): number {
    return this.buckets.get(key)?.wait() ?? 0;
  }

  /** The limit in words: "20/s (burst 40)". */
  get limitText(): string {
    return `${this.limit.rate}/s (burst ${this.limit.burst})`;
  }

  /** Keys holding a bucket now (for tests and metrics). */
  get size(): number {
    return this.buckets.size;
  }

  private sweep(): void {
    const now = (this.opts.now ?? Date.now)();
    if (this.buckets.size < (this.opts.sweepAbove ?? 10_000) || now - this.lastSweep < (this.opts.sweepEveryMs ?? 1_000)) return;
    this.lastSweep = now;
    for (const [k, b] of this.buckets) if (b.full()) this.buckets.delete(k);
  }
}
