/**
 * The client side of SESSION_DELTA (spec 002 §5.1), in core so that the client gateway, the CLI
 * and the tests apply frames one way: a frame whose version is greater than what is held for its
 * conversation (or for the badge) overwrites it whole with its absolute values; any other frame is
 * dropped. Nothing is computed from a frame: no sum, no difference (J-2 holds this file to that
 * by reading it). A frame whose previousVersion is above what this client has seen means frames
 * were lost: the client pulls again (PULL, never a compensating computation) and loads the pull.
 */
import type { BadgeFrame, SessionDeltaFrame, SessionDeltaRow, SessionFrame } from "./delta.js";

export interface HeldRow extends SessionDeltaRow {
  version: number;
}

export interface HeldBadge {
  totalUnread: number;
  totalMention: number;
  mutedUnread: number;
  version: number;
}

export type ApplyOutcome = "applied" | "stale" | "gap";

export class SessionDeltaApplier {
  readonly rows = new Map<string, HeldRow>();
  badge: HeldBadge | null = null;
  /** The highest version seen on the stream (applied or not). */
  seen = 0;
  /** Set by a gap until the next load(). */
  needsPull = false;
  readonly counts = { applied: 0, stale: 0, gap: 0 };

  /** The conversations in the list (deleted ones left out). */
  visible(): HeldRow[] {
    return [...this.rows.values()].filter((r) => !r.deleted);
  }

  /** What a pull answered: replaces everything held. */
  load(rows: readonly HeldRow[], badge: HeldBadge | null): void {
    this.rows.clear();
    for (const r of rows) this.rows.set(r.conversation, { ...r });
    this.badge = badge ? { ...badge } : null;
    let seen = badge?.version ?? 0;
    for (const r of rows) seen = Math.max(seen, r.version);
    this.seen = Math.max(this.seen, seen);
    this.needsPull = false;
  }

  apply(frame: SessionFrame): ApplyOutcome {
    if (frame.previousVersion > this.seen) {
      this.needsPull = true;
      this.counts.gap++;
      return "gap";
    }
    this.seen = Math.max(this.seen, frame.version);
    const outcome = frame.kind === "delta" ? this.applyRow(frame) : this.applyBadge(frame);
    this.counts[outcome]++;
    return outcome;
  }

  private applyRow(frame: SessionDeltaFrame): ApplyOutcome {
    const held = this.rows.get(frame.row.conversation);
    if (held && held.version >= frame.version) return "stale";
    // a deleted row stays held (deleted: true) with its version, so an older frame cannot bring it back
    this.rows.set(frame.row.conversation, { ...frame.row, version: frame.version });
    return "applied";
  }

  private applyBadge(frame: BadgeFrame): ApplyOutcome {
    if (this.badge && this.badge.version >= frame.version) return "stale";
    this.badge = { totalUnread: frame.totalUnread, totalMention: frame.totalMention, mutedUnread: frame.mutedUnread, version: frame.version };
    return "applied";
  }
}
