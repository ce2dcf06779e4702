/**
 * The in-memory snapshot of a user's conversation list (spec 002 §6.1) and its keyset pages
 * (§6.2, §6.3). Sorting does not happen in storage: a cold user's rows are read once from the
 * conversation-list engine and sorted here; content changes (a new message, unread moving) update
 * the snapshot in place under the same revision (the client gets them as SESSION_DELTA frames);
 * structural changes (pin, unpin, archive, leave, delete) move a row's zone or key and so give
 * the snapshot a new revision, which sends a client paging the old one back to page 1.
 *
 * Memory (the spec's TODO §10, decided here and in docs/conversation-list.md): a snapshot expires
 * SNAPSHOT_TTL_MS after it last served a page; over SNAPSHOT_ROWS_MAX rows held for all users
 * together the least recently used snapshots go first; a user keeps at most
 * MAX_CONVERSATIONS_PER_USER rows. Each user's last revision outlives their snapshot (bounded by
 * REVISIONS_REMEMBERED, least recently used forgotten first) so a reload never reissues a revision
 * a client may still hold.
 */
import { InvalidArgumentError, parseUuid, SNAPSHOT_PAGE, tenantUserKey, type BoundedLimit, type Uuid } from "../base/index.js";
import { decodeCursor, encodeCursor, type PageCursor } from "./cursor.js";
import { metrics } from "./metrics.js";
import { compareKeys, compareRows, sortKey, type SortKey } from "./order.js";
import type { SessionChange, SessionRow, ConversationRowSource } from "./rows.js";

/** `snapshot_ttl` (spec 002 §6.1): 5 min, counted from the last page served. */
export const SNAPSHOT_TTL_MS = 5 * 60_000;
/** `max_conversations_per_user` (spec 002 §6.1, appendix B.5): 5,000 rows per snapshot. */
export const MAX_CONVERSATIONS_PER_USER = 5000;
/** Rows held in all snapshots together before the least recently used snapshot is evicted. */
export const SNAPSHOT_ROWS_MAX = 500_000;
/** Users whose last snapshot revision is remembered after their snapshot went. */
export const REVISIONS_REMEMBERED = 100_000;

export interface SnapshotOptions {
  ttlMs?: number;
  rowsMax?: number;
  maxPerUser?: number;
  revisionsRemembered?: number;
  /** The clock (tests inject one). */
  now?: () => number;
}

export interface SnapshotPage {
  rows: SessionRow[];
  /** The cursor of the page after this one; null on the last page. */
  nextCursor: string | null;
  snapshotRevision: number;
  /**
   * False when the cursor named another revision: the page is the new revision's first page and
   * the client starts again (spec 002 §6.2). Only that: a cut snapshot is `snapshotTruncated`, so
   * that a client walking every page can tell "start again" from "this is all there is".
   */
  projectionComplete: boolean;
  /**
   * True when the user has more conversations than `maxConversationsPerUser`: the snapshot holds
   * the first ones in the list's order only (spec 002 §6.1 loads at most that many rows). Every
   * page of such a snapshot says so; walking it to the end gives exactly those rows.
   */
  snapshotTruncated: boolean;
  /** The bound the snapshot is cut at (`max_conversations_per_user`). */
  maxConversationsPerUser: number;
  /** Rows in the whole snapshot. */
  total: number;
}

interface UserSnapshot {
  revision: number;
  /** The stored version read before the rows were (null: the source has none to read). */
  storedVersion: number | null;
  rows: SessionRow[];
  byConversation: Map<string, SessionRow>;
  /**
   * The order's last_activity_id of rows whose own went down while held: the greatest the snapshot
   * has seen for the row (see keyOf). Rows not here are ordered by their own.
   */
  activityFloor: Map<string, string>;
  truncated: boolean;
  usedAt: number;
}

/**
 * The key a held row is ordered and paged by: its own, except that last_activity_id never goes
 * down while the snapshot holds the row. A message id is made before its conversation_seq is
 * allocated, so a later head can carry a smaller id (two nodes in one millisecond, a node whose
 * commit waited): ordered by the head's id, a row already paged would fall behind the cursor and
 * be paged again, which §6.2's keyset promises never happens. Kept at the greatest id seen, a
 * content change only ever moves a row up (towards the top, behind any cursor), the one move
 * §6.3 already covers with SESSION_DELTA. The greatest UUIDv7 is also the newest activity by
 * time, the monotonic activity of §2.2 (ZADD … GT). A reload starts from the rows' own ids again,
 * under a new revision.
 */
function keyOf(snap: UserSnapshot, row: SessionRow): SortKey {
  const key = sortKey(row);
  const floor = snap.activityFloor.get(row.conversation);
  return floor === undefined ? key : { ...key, lastActivityId: floor };
}

/** Index of the first row whose key is strictly after `key`. */
function firstAfter(snap: UserSnapshot, key: SortKey): number {
  const rows = snap.rows;
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compareKeys(keyOf(snap, rows[mid]!), key) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class SnapshotCache {
  private readonly ttlMs: number;
  private readonly rowsMax: number;
  private readonly maxPerUser: number;
  private readonly revisionsRemembered: number;
  private readonly now: () => number;
  /** In least-recently-used order (a use moves an entry to the end). */
  private readonly snapshots = new Map<string, UserSnapshot>();
  private readonly loading = new Map<string, { promise: Promise<UserSnapshot>; changes: SessionChange[] }>();
  private readonly revisions = new Map<string, number>();
  private rowsHeld = 0;

  constructor(private readonly source: Pick<ConversationRowSource, "rows" | "storedVersion" | "rowsAt">, opts: SnapshotOptions = {}) {
    this.ttlMs = opts.ttlMs ?? SNAPSHOT_TTL_MS;
    this.rowsMax = opts.rowsMax ?? SNAPSHOT_ROWS_MAX;
    this.maxPerUser = opts.maxPerUser ?? MAX_CONVERSATIONS_PER_USER;
    this.revisionsRemembered = opts.revisionsRemembered ?? REVISIONS_REMEMBERED;
    this.now = opts.now ?? Date.now;
  }

  /** One page of the user's list: the first page, or the one strictly after `cursor`; the values are checked here. */
  async page(tenantIn: string, userIn: string, opts: { cursor?: string; limit?: number } = {}): Promise<SnapshotPage> {
    const limit = opts.limit ?? SNAPSHOT_PAGE.default;
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > SNAPSHOT_PAGE.max) throw new InvalidArgumentError("limit", `limit must be an integer from 1 to ${SNAPSHOT_PAGE.max}`);
    return this.pageOf(parseUuid(tenantIn, "tenant"), parseUuid(userIn, "user"), limit as BoundedLimit, opts.cursor ?? null);
  }

  /** page() for values parsed where the request entered (core/operations): nothing is checked again. */
  async pageOf(tenant: Uuid, user: Uuid, limit: BoundedLimit, cursorText: string | null): Promise<SnapshotPage> {
    const cursor: PageCursor | null = cursorText ? decodeCursor(cursorText) : null;
    const snap = await this.snapshot(tenantUserKey(tenant, user), tenant, user);
    const stale = cursor !== null && cursor.snapshotRevision !== snap.revision;
    if (stale) metrics.staleCursor.inc();
    const start = cursor === null || stale ? 0 : firstAfter(snap, cursor);
    const rows = snap.rows.slice(start, start + limit);
    const more = start + rows.length < snap.rows.length;
    const nextCursor = more ? encodeCursor({ snapshotRevision: snap.revision, ...keyOf(snap, rows.at(-1)!) }) : null;
    return {
      rows, nextCursor, snapshotRevision: snap.revision, projectionComplete: !stale,
      snapshotTruncated: snap.truncated, maxConversationsPerUser: this.maxPerUser, total: snap.rows.length,
    };
  }

  /** Whether a snapshot of the user is held or loading (then its changes are wanted live). */
  holds(tenant: string, user: string, key: string = tenantUserKey(tenant, user)): boolean {
    return this.snapshots.has(key) || this.loading.has(key);
  }

  /** The current revision of a user's snapshot, or null when none is held. */
  revisionOf(tenant: string, user: string): number | null {
    return this.snapshots.get(tenantUserKey(tenant, user))?.revision ?? null;
  }

  /** Applies a change of the conversation-list engine to the user's snapshot, if one is held or loading. */
  apply(change: SessionChange): void {
    const key = tenantUserKey(change.tenant, change.user);
    const pending = this.loading.get(key);
    if (pending) pending.changes.push(change);
    const snap = this.snapshots.get(key);
    if (!snap) return;
    if (this.applyRows(snap, change)) {
      snap.revision = this.nextRevision(key);
      metrics.revisionInvalidated.inc();
    }
  }

  /** Rows held in every snapshot together. */
  get heldRows(): number {
    return this.rowsHeld;
  }

  get heldUsers(): number {
    return this.snapshots.size;
  }

  /** Drops expired snapshots; then least recently used ones while over the global bound. */
  evict(): void {
    const now = this.now();
    for (const [key, snap] of this.snapshots) {
      if (now - snap.usedAt < this.ttlMs && this.rowsHeld <= this.rowsMax) break;
      this.drop(key, snap);
    }
    // entries are in use order, so the loop above stops at the first fresh one while under the
    // bound; a fresh entry behind an expired one cannot exist (use moves an entry to the end)
  }

  clear(): void {
    for (const [key, snap] of this.snapshots) this.drop(key, snap);
  }

  private drop(key: string, snap: UserSnapshot): void {
    this.snapshots.delete(key);
    this.rowsHeld -= snap.rows.length;
    metrics.evicted.inc();
  }

  /**
   * Applies the rows of a change: each replaces the held row when newer (version), a deleted row
   * leaves the list. Returns whether the order's structure changed (a structural change, or a row
   * whose zone or pin rank moved): then the caller issues a new revision.
   */
  private applyRows(snap: UserSnapshot, change: SessionChange): boolean {
    let structural = change.structural;
    for (const row of change.rows) {
      const held = snap.byConversation.get(row.conversation);
      if (held && held.version >= row.version) continue;
      let activity = row.lastActivityId;
      if (held) {
        if (held.pinRank !== row.pinRank || held.deleted !== row.deleted || held.archived !== row.archived) structural = true;
        const heldActivity = keyOf(snap, held).lastActivityId;
        if (heldActivity > activity) activity = heldActivity;
        snap.rows.splice(this.indexOf(snap, held), 1);
        snap.byConversation.delete(row.conversation);
        snap.activityFloor.delete(row.conversation);
        this.rowsHeld--;
      }
      if (row.deleted) continue;
      if (snap.rows.length >= this.maxPerUser) {
        snap.truncated = true;
        continue;
      }
      if (activity !== row.lastActivityId) snap.activityFloor.set(row.conversation, activity);
      snap.rows.splice(firstAfter(snap, keyOf(snap, row)), 0, row);
      snap.byConversation.set(row.conversation, row);
      this.rowsHeld++;
    }
    return structural;
  }

  private indexOf(snap: UserSnapshot, row: SessionRow): number {
    const i = firstAfter(snap, keyOf(snap, row)) - 1;
    if (snap.rows[i] !== row) throw new Error("snapshot out of order");
    return i;
  }

  private nextRevision(key: string): number {
    const revision = (this.revisions.get(key) ?? 0) + 1;
    this.revisions.delete(key);
    this.revisions.set(key, revision);
    if (this.revisions.size > this.revisionsRemembered) this.revisions.delete(this.revisions.keys().next().value!);
    return revision;
  }

  private async snapshot(key: string, tenant: Uuid, user: Uuid): Promise<UserSnapshot> {
    const held = this.snapshots.get(key);
    const now = this.now();
    if (held && now - held.usedAt < this.ttlMs) {
      held.usedAt = now;
      this.snapshots.delete(key);
      this.snapshots.set(key, held);
      if (held.storedVersion !== null) await this.refreshIfMoved(key, held, tenant, user);
      return held;
    }
    if (held) this.drop(key, held);
    const inFlight = this.loading.get(key);
    if (inFlight) return inFlight.promise;
    const entry = { promise: this.load(key, tenant, user), changes: [] as SessionChange[] };
    this.loading.set(key, entry);
    try {
      return await entry.promise;
    } finally {
      this.loading.delete(key);
    }
  }

  /**
   * A held snapshot whose user's stored version moved since it read the rows: another process
   * (or this one) stored rows since. The rows are read again and applied as a change: newer
   * versions replace held rows, a held row the read no longer has is gone (deleted, or left), and
   * a new revision is issued only when the order's structure moved (spec 002 §6.3), as for a local
   * change. The version is read before the rows, so a write between the two shows next time.
   */
  private async refreshIfMoved(key: string, snap: UserSnapshot, tenant: Uuid, user: Uuid): Promise<void> {
    if ((await this.source.storedVersion!(tenant, user)) === snap.storedVersion) return;
    const { rows: fresh, storedVersion: stored } = await this.readRows(tenant, user);
    if (this.snapshots.get(key) !== snap) return; // dropped or replaced meanwhile
    snap.storedVersion = stored;
    const present = new Set(fresh.map((r) => r.conversation));
    // a row the store no longer lists is gone; it goes as a deleted row of the same version + 1
    const gone = snap.rows.filter((r) => !present.has(r.conversation)).map((r) => ({ ...r, deleted: true, version: r.version + 1 }));
    const structural = this.applyRows(snap, { tenant, user, rows: [...fresh, ...gone], badge: { totalUnread: 0, totalMention: 0, mutedUnread: 0, version: stored ?? 0 }, version: stored ?? 0, drivingEventId: "", structural: gone.length > 0 });
    metrics.refreshed.inc();
    if (structural) {
      snap.revision = this.nextRevision(key);
      metrics.revisionInvalidated.inc();
    }
  }

  /** The rows and the stored version they are at: one atomic read where the source has it, else the version first. */
  private async readRows(tenant: string, user: string): Promise<{ rows: SessionRow[]; storedVersion: number | null }> {
    if (this.source.rowsAt) return this.source.rowsAt(tenant, user);
    const storedVersion = this.source.storedVersion ? await this.source.storedVersion(tenant, user) : null;
    return { rows: await this.source.rows(tenant, user), storedVersion };
  }

  private async load(key: string, tenant: string, user: string): Promise<UserSnapshot> {
    const { rows: read, storedVersion } = await this.readRows(tenant, user);
    const all = read.filter((r) => !r.deleted).sort(compareRows);
    const rows = all.slice(0, this.maxPerUser);
    const snap: UserSnapshot = { revision: this.nextRevision(key), storedVersion, rows, byConversation: new Map(rows.map((r) => [r.conversation, r])), activityFloor: new Map(), truncated: all.length > rows.length, usedAt: this.now() };
    this.rowsHeld += rows.length;
    // changes that arrived while the rows were read: newer versions win, no client holds this revision yet
    for (const change of this.loading.get(key)?.changes ?? []) this.applyRows(snap, change);
    this.snapshots.set(key, snap);
    metrics.loaded.inc();
    metrics.loadedRows.observe(rows.length);
    this.evict();
    return snap;
  }
}
