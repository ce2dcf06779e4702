import type { KeySpace } from "./keys.js";
import { callScript } from "./lua.js";
import { metrics } from "./metrics.js";
import type { RedisStore } from "./store.js";

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
    return this.store.clientForKey(this.keys.projectionEpoch());
  }

  async get(): Promise<number> {
    const v = Number((await this.client().get(this.keys.projectionEpoch())) ?? "0");
    metrics.projectionEpoch.set(v);
    return v;
  }

  /** Increments the epoch and records why, in one atomic step; returns the new epoch. */
  async bump(reason: string, by: string): Promise<EpochBump> {
    const at = this.now();
    const [reply] = await callScript(this.client(), "bumpEpoch", [this.keys.projectionEpoch(), this.keys.projectionEpochLog()], [reason, by, at, LOG_KEEP]);
    const epoch = Number(reply);
    metrics.projectionEpoch.set(epoch);
    return { epoch, reason, by, at };
  }

  /** The newest bumps, newest first. */
  async history(limit = 10): Promise<EpochBump[]> {
    const raw = await this.client().lrange(this.keys.projectionEpochLog(), 0, Math.max(0, limit - 1));
    return raw.map((r) => JSON.parse(r) as EpochBump);
  }
}
