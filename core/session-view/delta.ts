/**
 * SESSION_DELTA (spec 002 §5): absolute-value frames per (user, conversation), versioned by the
 * user's projection version (the role of projection_mailbox_seq), and badge frames likewise. A
 * merge window keeps only the newest frame per (user, conversation) and per user's badge: a later
 * frame overwrites an earlier one whole; nothing is ever summed (§5.1 "禁止任何累加型语义合并").
 *
 * Frames skip versions by design (the window drops overwritten ones, and one change may touch
 * several conversations), so a client cannot find a loss from the versions alone: every frame sent
 * on a stream carries previousVersion, the highest version sent before it on that stream (0 for the
 * stream's first). A client that holds less than previousVersion missed a frame and pulls again.
 */
import { tenantUserKey, type Uuid } from "../base/index.js";
import { metrics } from "./metrics.js";
import type { SessionBadge, SessionChange, SessionRow } from "./rows.js";

/** `session_delta_merge_window` (spec 002 §5.1: 100–200 ms). */
export const SESSION_DELTA_MERGE_WINDOW_MS = 150;
/** The upper end of spec 002 §5.1's `session_delta_merge_window` range: no change is held longer before its frame leaves. */
export const SESSION_DELTA_MERGE_WINDOW_MAX_MS = 200;

/** The absolute state of one conversation in the user's list. */
export type SessionDeltaRow = Omit<SessionRow, "tenant" | "user" | "lastActivitySeq" | "version">;

export interface SessionDeltaFrame {
  kind: "delta";
  tenant: Uuid;
  user: Uuid;
  version: number;
  previousVersion: number;
  drivingEventId: string;
  row: SessionDeltaRow;
}

export interface BadgeFrame {
  kind: "badge";
  tenant: Uuid;
  user: Uuid;
  version: number;
  previousVersion: number;
  drivingEventId: string;
  totalUnread: number;
  totalMention: number;
  mutedUnread: number;
}

export type SessionFrame = SessionDeltaFrame | BadgeFrame;

export function deltaRow(r: SessionRow): SessionDeltaRow {
  return {
    conversation: r.conversation, lastActivityId: r.lastActivityId, headSeq: r.headSeq, unread: r.unread, unreadExact: r.unreadExact,
    mentions: r.mentions, mentionFirstSeq: r.mentionFirstSeq, pinRank: r.pinRank, muted: r.muted, archived: r.archived,
    hiddenBeforeSeq: r.hiddenBeforeSeq, deletedBeforeSeq: r.deletedBeforeSeq, deleted: r.deleted,
  };
}

export function badgeFrame(tenant: Uuid, user: Uuid, badge: SessionBadge, drivingEventId: string): BadgeFrame {
  return { kind: "badge", tenant, user, version: badge.version, previousVersion: 0, drivingEventId, totalUnread: badge.totalUnread, totalMention: badge.totalMention, mutedUnread: badge.mutedUnread };
}

type Listener = (frame: SessionFrame) => void;

interface Pending {
  rows: Map<string, SessionDeltaFrame>;
  badge: BadgeFrame | null;
}

/** Frames in the order a client applies them: by version, a version's rows before its badge. */
function ordered(p: Pending): SessionFrame[] {
  const frames: SessionFrame[] = [...p.rows.values()];
  if (p.badge) frames.push(p.badge);
  return frames.sort((a, b) => a.version - b.version || (a.kind === b.kind ? 0 : a.kind === "delta" ? -1 : 1));
}

/**
 * The merge window and the watchers of each user. Only users someone watches are buffered; a
 * flush sends each watcher its user's frames in order, stamped with the watcher's own
 * previousVersion chain.
 */
export class SessionDeltaMerger {
  private readonly pending = new Map<string, Pending>();
  private readonly watchers = new Map<string, Set<{ listener: Listener; closed: () => void; sent: number }>>();
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly windowMs: number = SESSION_DELTA_MERGE_WINDOW_MS) {}

  /**
   * Sends `listener` every frame of the user from now on, until the unsubscribe it returns is
   * called; `closed` runs when the merger closes every watch (a server shutting down).
   */
  watch(tenant: Uuid, user: Uuid, listener: Listener, closed: () => void = () => {}): () => void {
    const key = tenantUserKey(tenant, user);
    let set = this.watchers.get(key);
    if (!set) this.watchers.set(key, (set = new Set()));
    const w = { listener, closed, sent: 0 };
    set.add(w);
    return () => {
      set.delete(w);
      if (set.size === 0 && this.watchers.get(key) === set) {
        this.watchers.delete(key);
        this.pending.delete(key);
      }
    };
  }

  /** Whether anyone watches the user. */
  watching(tenant: Uuid, user: Uuid, key: string = tenantUserKey(tenant, user)): boolean {
    return this.watchers.has(key);
  }

  /** Sends one frame to one watcher at once, outside the window (a watch's first badge). */
  sendNow(tenant: Uuid, user: Uuid, listener: Listener, frame: SessionFrame): void {
    const w = [...(this.watchers.get(tenantUserKey(tenant, user)) ?? [])].find((x) => x.listener === listener);
    if (!w) return;
    w.listener({ ...frame, previousVersion: w.sent });
    w.sent = Math.max(w.sent, frame.version);
  }

  /** Takes a change of the conversation-list engine into the window (overwrite by newer version). */
  push(change: SessionChange): void {
    const key = tenantUserKey(change.tenant, change.user);
    if (!this.watchers.has(key)) return;
    let p = this.pending.get(key);
    if (!p) this.pending.set(key, (p = { rows: new Map(), badge: null }));
    for (const r of change.rows) {
      const held = p.rows.get(r.conversation);
      if (held && held.version >= r.version) continue;
      if (held) metrics.deltaMerged.inc();
      p.rows.set(r.conversation, { kind: "delta", tenant: change.tenant, user: change.user, version: r.version, previousVersion: 0, drivingEventId: change.drivingEventId, row: deltaRow(r) });
    }
    if (!p.badge || p.badge.version < change.badge.version) {
      if (p.badge) metrics.deltaMerged.inc();
      p.badge = badgeFrame(change.tenant, change.user, change.badge, change.drivingEventId);
    }
    this.timer ??= setTimeout(() => this.flush(), this.windowMs);
  }

  /** Sends what the window holds now (the timer does this; stop() too). */
  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const pending = [...this.pending];
    this.pending.clear();
    for (const [key, p] of pending) {
      const frames = ordered(p);
      for (const w of this.watchers.get(key) ?? []) {
        for (const f of frames) {
          w.listener({ ...f, previousVersion: w.sent });
          w.sent = Math.max(w.sent, f.version);
          metrics.deltaFrames.inc({ kind: f.kind });
        }
      }
    }
  }

  /** Sends what the window holds, then ends every watch (their `closed`). */
  closeAll(): void {
    this.flush();
    const all = [...this.watchers.values()].flatMap((set) => [...set]);
    this.watchers.clear();
    this.pending.clear();
    for (const w of all) w.closed();
  }

  stop(): void {
    this.closeAll();
  }
}
