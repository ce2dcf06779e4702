import { parseUuid, tenantUserKey, type BoundedLimit, type Uuid } from "../base/index.js";
import { badgeFrame, SessionDeltaMerger, SESSION_DELTA_MERGE_WINDOW_MS, type SessionFrame } from "./delta.js";
import type { ConversationRowSource, SessionChange } from "./rows.js";
import { SnapshotCache, type SnapshotOptions, type SnapshotPage } from "./snapshot.js";

/** How often expired snapshots are swept when no page asks (a page also evicts). */
export const SNAPSHOT_SWEEP_INTERVAL_MS = 30_000;

export interface SessionViewOptions {
  snapshot?: SnapshotOptions;
  mergeWindowMs?: number;
}

/**
 * The conversation list as clients see it (spec 002 §5, §6): pages of the in-memory snapshot and
 * the SESSION_DELTA stream of a user, both fed by one subscription to the conversation-list
 * engine's changes. Built by the runtime over core/conversation-list: start subscribes, stop
 * unsubscribes, flushes the window, ends every watch and drops every snapshot.
 */
export class SessionView {
  readonly name = "session-view";
  readonly snapshots: SnapshotCache;
  readonly merger: SessionDeltaMerger;
  private unsubscribe: (() => void) | null = null;
  private sweep: NodeJS.Timeout | null = null;

  constructor(private readonly source: ConversationRowSource, opts: SessionViewOptions = {}) {
    this.snapshots = new SnapshotCache(source, opts.snapshot);
    this.merger = new SessionDeltaMerger(opts.mergeWindowMs ?? SESSION_DELTA_MERGE_WINDOW_MS);
  }

  start(): void {
    this.unsubscribe ??= this.source.onChange((change) => {
      this.snapshots.apply(change);
      this.merger.push(change);
    });
    this.source.setLiveInterest?.((tenant, user, key = tenantUserKey(tenant, user)) => this.snapshots.holds(tenant, user, key) || this.merger.watching(tenant, user, key));
    this.sweep ??= setInterval(() => this.snapshots.evict(), SNAPSHOT_SWEEP_INTERVAL_MS).unref();
  }

  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
    this.source.setLiveInterest?.(null);
    if (this.sweep) clearInterval(this.sweep);
    this.sweep = null;
    this.merger.stop();
    this.snapshots.clear();
  }

  /**
   * A change of a user's list made on another node (core/delivery relays it here because this node
   * holds the user's devices): taken exactly as a change made here — its absolute rows and version
   * overwrite older ones, an older one is dropped by the merge window and the snapshot.
   */
  relayed(change: SessionChange): void {
    this.snapshots.apply(change);
    this.merger.push(change);
  }

  /** Ends every watch (a server shutting down ends its streams before it stops the engine). */
  closeWatchers(): void {
    this.merger.closeAll();
  }

  page(tenant: string, user: string, opts: { cursor?: string; limit?: number } = {}): Promise<SnapshotPage> {
    return this.snapshots.page(tenant, user, opts);
  }

  /** page() for values parsed where the request entered (core/operations). */
  pageOf(tenant: Uuid, user: Uuid, limit: BoundedLimit, cursor: string | null): Promise<SnapshotPage> {
    return this.snapshots.pageOf(tenant, user, limit, cursor);
  }

  /**
   * Streams the user's frames to `listener`: first the current badge (so a watcher knows where it
   * starts), then every delta and badge frame after the merge window. Returns the unsubscribe.
   */
  async watch(tenantIn: string, userIn: string, listener: (frame: SessionFrame) => void, closed?: () => void): Promise<() => void> {
    const tenant: Uuid = parseUuid(tenantIn, "tenant");
    const user: Uuid = parseUuid(userIn, "user");
    const stop = this.merger.watch(tenant, user, listener, closed);
    try {
      const badge = await (this.source.drawnBadge?.(tenant, user) ?? this.source.badge(tenant, user));
      this.merger.sendNow(tenant, user, listener, badgeFrame(tenant, user, badge, ""));
    } catch (err) {
      stop();
      throw err;
    }
    return stop;
  }
}
