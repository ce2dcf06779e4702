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

  async get(): Promise<number> {
    const v = Number((await this.client().get(projectionEpochKey(this.keys))) ?? "0");
    metrics.projectionEpoch.set(v);
    return v;
  }

  /** Increments the epoch and records why, in one atomic step; returns the new epoch. */
  async bump(reason: string, by: string): Promise<EpochBump> {
    const at = this.now();
    const epoch = await bumpEpochScript.run(this.client(), { epoch: projectionEpochKey(this.keys), epochLog: projectionEpochLogKey(this.keys) }, { reason, by, at, keep: LOG_KEEP });
    metrics.projectionEpoch.set(epoch);
    return { epoch, reason, by, at };
  }

  /** The newest bumps, newest first. */
  async history(limit = 10): Promise<EpochBump[]> {
    const raw = await this.client().lrange(projectionEpochLogKey(this.keys), 0, Math.max(0, limit - 1));
    return raw.map((r) => JSON.parse(r) as EpochBump);
  }
}
