import type { Uuid } from "../base/index.js";
import { metrics } from "./metrics.js";

/**
 * A user's live rows are published at most once per this many ms (0: at every hand-off). Each
 * publication reads the user's live view from Redis (one script: the stored rows, the badge, a new
 * version) and becomes SESSION_DELTA and BADGE_UPDATE frames, which the session view's merge
 * window then folds to one per window. A change that waits here waits for the merge window after
 * it too, so the two together stay within spec 002 §5.1's `session_delta_merge_window` range
 * (100–200 ms): its upper end (200 ms) less the session view's window (150 ms). The runtime
 * passes the same difference for the merge window it runs with (core/runtime); this is the
 * compactor's default outside a runtime.
 */
export const LIVE_PUBLISH_INTERVAL_MS = 50;

interface Cooling {
  tenant: Uuid;
  user: Uuid;
  /** Conversations changed since the last publication, published together when the interval ends. */
  waiting: Set<string>;
  cancel: () => void;
}

/** Runs `fn` once after `ms` (injectable: tests end intervals by hand); returns its cancel. */
export type LiveTimer = (fn: () => void, ms: number) => () => void;

const realTimer: LiveTimer = (fn, ms) => {
  const t = setTimeout(fn, ms);
  t.unref();
  return () => clearTimeout(t);
};

/**
 * Leading and trailing edges per user: the first change after a quiet interval is published at
 * once; the changes that come during the interval are published together at its end, which starts
 * the next interval. So a lone change costs no latency, a busy user costs one live read per
 * interval, and the last change is always published (never only remembered).
 */
export class LiveThrottle {
  private readonly cooling = new Map<string, Cooling>();

  constructor(
    private readonly intervalMs: number,
    private readonly publish: (tenant: Uuid, user: Uuid, conversations: string[]) => void,
    private readonly timer: LiveTimer = realTimer,
  ) {}

  /** A change of `conversations` (hex) in the user's rows; `id` is the user's tenantUserKey. */
  offer(id: string, tenant: Uuid, user: Uuid, conversations: Iterable<string>): void {
    if (this.intervalMs <= 0) {
      this.publish(tenant, user, [...conversations]);
      return;
    }
    const c = this.cooling.get(id);
    if (c) {
      const before = c.waiting.size;
      for (const hex of conversations) c.waiting.add(hex);
      // a live read saved: the publication this change waits for was already due for another one
      if (before > 0) metrics.liveMerged.inc();
      return;
    }
    this.start(id, tenant, user, [...conversations]);
  }

  /** Users in an interval now (tests, status). */
  get size(): number {
    return this.cooling.size;
  }

  /** Drops every interval and what waits in it: the final flush writes and publishes the rows. */
  stop(): void {
    for (const c of this.cooling.values()) c.cancel();
    this.cooling.clear();
  }

  private start(id: string, tenant: Uuid, user: Uuid, conversations: string[]): void {
    this.cooling.set(id, { tenant, user, waiting: new Set(), cancel: this.timer(() => this.end(id), this.intervalMs) });
    this.publish(tenant, user, conversations);
  }

  private end(id: string): void {
    const c = this.cooling.get(id);
    if (!c) return;
    this.cooling.delete(id);
    if (c.waiting.size > 0) this.start(id, c.tenant, c.user, [...c.waiting]);
  }
}
