import { hexToUuid, UNREAD_PRECISE_LIMIT, type Uuid } from "../base/index.js";
import type { RecomputeReply } from "./scripts.js";

/** A user's own choices about a conversation (kept in `prefs`, read by a rebuild). */
export interface RowPrefs {
  /** hidden_before_conversation_seq (clear history: the conversation stays in the list). */
  hidden: number;
  /** deleted_before_conversation_seq (delete: it leaves the list until a newer message). */
  deleted: number;
  /**
   * The user deleted the conversation: `deleted` is in force even when it is 0 (a delete before
   * any message, spec 002 §7 writes deleted_before = head.latest = 0). Kept in the prefs only: a
   * stored row is never a deleted one, and once a newer message revived it the flag says nothing
   * that `deleted < lastActivitySeq` does not.
   */
  deletedBeforeSet: boolean;
  pinRank: number | null;
  muted: boolean;
  archived: boolean;
}

export const NO_PREFS: RowPrefs = { hidden: 0, deleted: 0, deletedBeforeSet: false, pinRank: null, muted: false, archived: false };

/**
 * One (user, conversation) row of the projection (UserSessionProjection, spec 002 §3–§7) as
 * stored: the membership interval it was computed with, read position, the user's choices, the
 * newest visible activity, the cached unread and mentions relative to `unreadBase`, and the
 * per-user version + driving event of its last change.
 */
export interface RowState extends RowPrefs {
  joinedAt: number;
  leftAt: number | null;
  /** A ACTIVE, L LEFT, R REMOVED. */
  state: "A" | "L" | "R";
  read: number;
  /** 32 hex of the newest visible record's message id (UUIDv7: sortable); "" when none. */
  lastActivityId: string;
  lastActivitySeq: number;
  /** created_at (ms) of that record. */
  lastActivityAt: number;
  /** The newest seq this row has taken into account (visible or not). */
  headSeq: number;
  unread: number;
  /** unread_base_seq: the base the cached unread counts from (§3.2). */
  unreadBase: number;
  unreadExact: boolean;
  mentions: number;
  mentionFirst: number | null;
  version: number;
  drivingEventId: string;
}

/** base(u,c) = max(read, hidden_before, joined_at, deleted_before) (spec 002 §3.1). */
export function baseOf(r: RowState): number {
  return Math.max(r.read, r.hidden, r.joinedAt, r.deleted);
}

/**
 * §7: deleted while deleted_before reaches the newest record the user sees. A delete before any
 * message has deleted_before 0: `deletedBeforeSet` says it is in force (rows written before the
 * flag existed were deleted at 1 or above, which `deleted > 0` still recognises).
 */
export function isDeleted(r: RowState): boolean {
  return (r.deleted > 0 || r.deletedBeforeSet) && r.deleted >= r.lastActivitySeq;
}

const num = (s: string | undefined) => Number(s ?? "0");
const opt = (s: string | undefined) => (s === undefined || s === "" ? null : Number(s));

/**
 * The stored form, "|"-separated. Field order is the contract of applyRows-4.lua (it reads 3
 * state, 8 muted, 9 archived, 13 unread, 16 mentions): joinedAt|leftAt|state|read|hidden|deleted|
 * pin|muted|archived|lastActivityId|lastActivitySeq|headSeq|unread|unreadBase|unreadExact|mentions|
 * mentionFirst|lastActivityAt, then version|drivingEventId (appended by the script).
 */
export function encodeRowCore(r: RowState): string {
  return [
    r.joinedAt, r.leftAt ?? "", r.state, r.read, r.hidden, r.deleted, r.pinRank ?? "", r.muted ? 1 : 0, r.archived ? 1 : 0,
    r.lastActivityId, r.lastActivitySeq, r.headSeq, r.unread, r.unreadBase, r.unreadExact ? 1 : 0, r.mentions, r.mentionFirst ?? "",
    r.lastActivityAt,
  ].join("|");
}

export function decodeRow(raw: string): RowState {
  const f = raw.split("|");
  return {
    joinedAt: num(f[0]), leftAt: opt(f[1]), state: (f[2] ?? "A") as RowState["state"], read: num(f[3]), hidden: num(f[4]), deleted: num(f[5]),
    pinRank: opt(f[6]), muted: f[7] === "1", archived: f[8] === "1", lastActivityId: f[9] ?? "", lastActivitySeq: num(f[10]),
    headSeq: num(f[11]), unread: num(f[12]), unreadBase: num(f[13]), unreadExact: f[14] === "1", mentions: num(f[15]), deletedBeforeSet: false,
    mentionFirst: opt(f[16]), lastActivityAt: num(f[17]), version: num(f[18]), drivingEventId: f[19] ?? "",
  };
}

/** `hidden|deleted|pin|muted|archived|deletedBeforeSet`; the sixth field is absent in prefs written before it (read as 0). */
export function encodePrefs(p: RowPrefs): string {
  return [p.hidden, p.deleted, p.pinRank ?? "", p.muted ? 1 : 0, p.archived ? 1 : 0, p.deletedBeforeSet ? 1 : 0].join("|");
}

export function decodePrefs(raw: string | null | undefined): RowPrefs {
  if (!raw) return { ...NO_PREFS };
  const f = raw.split("|");
  return { hidden: num(f[0]), deleted: num(f[1]), pinRank: opt(f[2]), muted: f[3] === "1", archived: f[4] === "1", deletedBeforeSet: f[5] === "1" };
}

export function prefsOf(r: RowPrefs): RowPrefs {
  return { hidden: r.hidden, deleted: r.deleted, deletedBeforeSet: r.deletedBeforeSet, pinRank: r.pinRank, muted: r.muted, archived: r.archived };
}

/** The row the authority defines (a bounded recompute, §3.3), keeping the user's choices. */
export function rowFromRecompute(rc: RecomputeReply, prefs: RowPrefs, prev: RowState | null): RowState {
  return {
    ...prefs,
    joinedAt: rc.joinedAt,
    leftAt: rc.leftAt,
    state: rc.state,
    read: rc.readSeq,
    lastActivityId: rc.headMessageId,
    lastActivitySeq: rc.headMessageId === "" ? 0 : rc.activitySeq,
    lastActivityAt: rc.headCreatedAt,
    headSeq: Math.max(rc.headSeq, prev?.headSeq ?? 0),
    unread: rc.unread,
    unreadBase: Math.max(rc.readSeq, prefs.hidden, rc.joinedAt, prefs.deleted),
    unreadExact: rc.exact,
    mentions: rc.mentions,
    mentionFirst: rc.mentionFirst,
    version: prev?.version ?? 0,
    drivingEventId: prev?.drivingEventId ?? "",
  };
}

/** One delivered record as the row sees it (from a dispatch record's history entry). */
export interface InHandEntry {
  seq: number;
  /** 32 hex. */
  messageId: string;
  senderHex: string;
  control: boolean;
  countsUnread: boolean;
  createdAt: number;
  /** Concatenated 32-hex ids of the mentioned users ("" none). */
  mentionsHex: string;
  /** Concatenated 32-hex ids of the users a membership CONTROL message changes ("" none). */
  membershipHex: string;
  eventId: string;
  /** The record does not move the conversation (ord=0: a recall or edit event renders at its target). */
  neutral?: boolean;
  /** A recall event's target, as the event carries it (spec 002 §3.5's target_* fields). */
  recallOf?: RecallTarget | null;
}

/** What a recall event says of its target: enough to decide §3.5's decrement without reading it. */
export interface RecallTarget {
  seq: number;
  senderHex: string;
  countsUnread: boolean;
  mentionsHex: string;
}

export function namesUser(concat: string, userHex: string): boolean {
  for (let i = 0; i + 32 <= concat.length; i += 32) if (concat.startsWith(userHex, i)) return true;
  return false;
}

/** Counts toward unread(u,c) (§3.1: from someone else, counts_unread; control messages never). */
export function counts(e: InHandEntry, userHex: string): boolean {
  return !e.control && e.countsUnread && e.senderHex !== userHex;
}

/**
 * Applies a record newer than everything the row has seen (seq > headSeq: new for this row by
 * construction, so adding is safe). Returns false when the row must be recomputed instead: the
 * record changes the user's own membership (the interval moves), it is not newer (a late or
 * repeated delivery, which only the authority can tell apart), or past unread_precise_limit a
 * counted mention falls out of the newest `cap` seqs. Changes `r` only when it returns true.
 */
export function applyEntry(r: RowState, e: InHandEntry, userHex: string, cap: number = UNREAD_PRECISE_LIMIT): boolean {
  if (e.membershipHex !== "" && namesUser(e.membershipHex, userHex)) return false;
  if (e.seq <= r.headSeq) return false;
  const visible = e.seq > r.joinedAt && (r.leftAt === null || e.seq < r.leftAt);
  if (!visible) {
    r.headSeq = e.seq;
    return true;
  }
  const base = baseOf(r);
  const beyond = e.seq - base > cap;
  // Past the cap, mentions count over the newest `cap` seqs (e.seq - cap, e.seq], as the bounded
  // recompute counts them: a counted mention that falls out of that window needs the history.
  // mentionFirst is the oldest counted one, so none leaves while it is above the window.
  if (beyond && r.mentionFirst !== null && r.mentionFirst <= e.seq - cap) return false;
  if (e.recallOf && !recallDecrement(r, e.recallOf, userHex, base, beyond)) return false;
  r.headSeq = e.seq;
  if (!e.neutral) {
    r.lastActivityId = e.messageId;
    r.lastActivitySeq = e.seq;
    r.lastActivityAt = e.createdAt;
  }
  if (beyond) {
    // §3.3's rule is on the span, not on the count: latest - base > unread_precise_limit gives
    // unread = limit, unread_exact = false, whoever sent the records in the span (the bounded
    // recompute, reconcile, a rebuild and the definitional read all apply the same rule)
    r.unread = cap;
    r.unreadExact = false;
  }
  if (counts(e, userHex) && e.seq > base) {
    if (!beyond) r.unread++;
    if (namesUser(e.mentionsHex, userHex)) {
      r.mentions++;
      r.mentionFirst ??= e.seq;
    }
  }
  return true;
}

/**
 * §3.5: a recall of a message the row counted lowers unread by 1 (and mentions when it named the
 * user) — only when its sender is someone else, it counted (counts_unread), it lies above base and
 * is one the row has taken in (seq ≤ headSeq, inside the user's interval). Never below 0. Returns
 * false when only a recompute can tell: unread is capped (beyond unread_precise_limit), or the
 * recalled message is the first counted mention (the next one is in the history).
 */
function recallDecrement(r: RowState, t: RecallTarget, userHex: string, base: number, beyond: boolean): boolean {
  const visible = t.seq > r.joinedAt && (r.leftAt === null || t.seq < r.leftAt);
  if (!visible || !t.countsUnread || t.senderHex === userHex || t.seq <= base || t.seq > r.headSeq) return true;
  if (beyond || !r.unreadExact) return false;
  if (namesUser(t.mentionsHex, userHex)) {
    if (r.mentionFirst === t.seq) return false;
    r.mentions = Math.max(0, r.mentions - 1);
  }
  r.unread = Math.max(0, r.unread - 1);
  return true;
}

/**
 * The three-state update of §3.2 when base(u,c) moved to `nb` (read, clear, delete). `inHand`
 * are the records this process holds for the row, all of those after `windowStart` (the row's
 * headSeq when the window began). Returns false for (c): a bounded recompute is needed.
 */
export function moveBase(r: RowState, nb: number, inHand: readonly InHandEntry[], windowStart: number | null, userHex: string): boolean {
  const ob = r.unreadBase;
  if (nb <= ob) return true;
  // (a) the range (ob, nb] lies in the records in hand: decrement unread and mentions together
  if (windowStart !== null && ob >= windowStart && r.unreadExact) {
    let du = 0;
    let dm = 0;
    let first: number | null = null;
    // a recalled record no longer counts (its recall already took it off, §3.5)
    let recalled: Set<number> | null = null;
    for (const e of inHand) if (e.recallOf && e.seq <= r.headSeq) (recalled ??= new Set()).add(e.recallOf.seq);
    for (const e of inHand) {
      if (!counts(e, userHex) || e.seq <= ob || e.seq > r.headSeq || recalled?.has(e.seq)) continue;
      const mentioned = namesUser(e.mentionsHex, userHex);
      if (e.seq <= nb) {
        du++;
        if (mentioned) dm++;
      } else if (mentioned && (first === null || e.seq < first)) {
        first = e.seq;
      }
    }
    r.unread = Math.max(0, r.unread - du);
    r.mentions = Math.max(0, r.mentions - dm);
    r.mentionFirst = r.mentions > 0 ? first : null;
    r.unreadBase = nb;
    return true;
  }
  // (b) base reached the latest: zero
  if (nb >= r.headSeq) {
    r.unread = 0;
    r.mentions = 0;
    r.mentionFirst = null;
    r.unreadExact = true;
    r.unreadBase = nb;
    return true;
  }
  // (c) anything else: recompute, never guess (and never clear)
  return false;
}

export interface ConversationRow {
  tenant: Uuid;
  user: Uuid;
  conversation: Uuid;
  /** 32 hex of the newest visible record's UUIDv7 message id (sortable); "" when none. */
  lastActivityId: string;
  lastActivitySeq: number;
  /** created_at (ms) of the newest visible record; 0 when none. */
  lastActivityAt: number;
  headSeq: number;
  unread: number;
  unreadExact: boolean;
  mentions: number;
  mentionFirstSeq: number | null;
  pinRank: number | null;
  muted: boolean;
  archived: boolean;
  hiddenBeforeSeq: number;
  deletedBeforeSeq: number;
  /** Deleted (§7): not in the list until a newer message arrives. */
  deleted: boolean;
  readSeq: number;
  joinedAt: number;
  leftAt: number | null;
  membership: "ACTIVE" | "LEFT" | "REMOVED";
  /** The per-user projection version of the row's last change. */
  version: number;
  drivingEventId: string;
}

const MEMBERSHIP = { A: "ACTIVE", L: "LEFT", R: "REMOVED" } as const;

export function toConversationRow(tenant: Uuid, user: Uuid, conversationHex: string, r: RowState): ConversationRow {
  return {
    tenant, user, conversation: hexToUuid(conversationHex),
    lastActivityId: r.lastActivityId, lastActivitySeq: r.lastActivitySeq, lastActivityAt: r.lastActivityAt, headSeq: r.headSeq,
    unread: r.unread, unreadExact: r.unreadExact, mentions: r.mentions, mentionFirstSeq: r.mentionFirst,
    pinRank: r.pinRank, muted: r.muted, archived: r.archived, hiddenBeforeSeq: r.hidden, deletedBeforeSeq: r.deleted,
    deleted: isDeleted(r), readSeq: r.read, joinedAt: r.joinedAt, leftAt: r.leftAt, membership: MEMBERSHIP[r.state],
    version: r.version, drivingEventId: r.drivingEventId,
  };
}

export interface BadgeState {
  totalUnread: number;
  totalMention: number;
  mutedUnread: number;
  /** The per-user projection version the badge is at. */
  version: number;
}

/** What a row adds to the badge (§4; the same rule as applyRows-4.lua's contrib). */
export function contribution(r: RowState | null, includeMuted: boolean): Omit<BadgeState, "version"> {
  if (!r || isDeleted(r)) return { totalUnread: 0, totalMention: 0, mutedUnread: 0 };
  const active = r.state === "A";
  return {
    totalUnread: active && !r.archived && (!r.muted || includeMuted) ? r.unread : 0,
    totalMention: active ? r.mentions : 0,
    mutedUnread: r.muted ? r.unread : 0,
  };
}

/**
 * The live view of a stored row (docs/conversation-list.md, "the low-latency path"): the held
 * records newer than everything the row has taken, applied in memory. A record at or below its
 * head is already in it or late: the flush recomputes it. Returns null when a held record moves
 * the user's own membership (only a recompute knows the row then).
 */
export function liveRow(stored: RowState, held: readonly InHandEntry[], userHex: string, cap: number = UNREAD_PRECISE_LIMIT): RowState | null {
  const r = { ...stored };
  for (const e of [...held].sort((a, b) => a.seq - b.seq)) {
    if (e.membershipHex !== "" && namesUser(e.membershipHex, userHex)) return null;
    if (e.seq <= r.headSeq) continue;
    if (!applyEntry(r, e, userHex, cap)) return null;
  }
  return r;
}

/** Live rows LiveRowCache keeps at most (then it starts again empty). */
export const LIVE_ROW_CACHE_MAX = 50_000;

/**
 * The live row of a conversation the user has no stored row of yet (a new group's first window).
 * Without it every hand-off recomputed that row (a read of the conversation) until the compactor's
 * first flush wrote it, up to PROJECTION_COMPACTION_WINDOW_MS later: in bench/loadgen's new groups,
 * 5 % of the node's busy CPU and a Redis read per member and message. The recompute it needed once
 * is kept as a base (what was committed up to its head, membership events included), and the
 * window's records above that head are applied to it one applyEntry each, as LiveRowCache does
 * from a stored row. Kept only while the same held records are seen (the same first and last
 * objects at the same places: a take or a flush makes new ones) with the same prefs (a clear or a
 * delete, by any process, writes them); a record above the head that names the user (membership)
 * or is older than one applied, or one applyEntry refuses, makes the caller recompute again.
 */
export class NewRowCache {
  private readonly memo = new Map<string, NewRowMemo>();

  constructor(private readonly max: number = LIVE_ROW_CACHE_MAX) {}

  /** The live row of `key` from its kept base and `held`; null when none is kept or it cannot be moved (recompute, then remember()). */
  of(key: string, held: readonly InHandEntry[], prefsRaw: string | null, userHex: string, cap: number = UNREAD_PRECISE_LIMIT): RowState | null {
    const m = this.memo.get(key);
    if (!m || m.prefsRaw !== prefsRaw || held.length < m.n || held.length === 0 || held[0] !== m.first || (m.n > 0 && held[m.n - 1] !== m.last)) return null;
    const r = { ...m.row };
    for (let i = m.n; i < held.length; i++) {
      const e = held[i]!;
      // in the recompute already (committed before it read): a membership event among them too
      if (e.seq <= m.baseHead) continue;
      if ((e.membershipHex !== "" && namesUser(e.membershipHex, userHex)) || e.seq <= r.headSeq || !applyEntry(r, e, userHex, cap)) {
        this.memo.delete(key);
        return null;
      }
    }
    m.n = held.length;
    m.last = held[held.length - 1]!;
    m.row = r;
    return { ...r };
  }

  /**
   * Keeps `base` (a recompute made while `held` was held) for `key`. Every held record is looked at
   * again by the next of(): one handed over while the recompute read may be above its head.
   */
  remember(key: string, base: RowState, held: readonly InHandEntry[], prefsRaw: string | null): void {
    if (held.length === 0) return;
    if (this.memo.size >= this.max && !this.memo.has(key)) this.memo.clear();
    this.memo.set(key, { baseHead: base.headSeq, prefsRaw, n: 0, first: held[0]!, last: held[0]!, row: { ...base } });
  }
}

interface NewRowMemo {
  /** The recompute's head: records at or below it are counted in it. */
  baseHead: number;
  prefsRaw: string | null;
  /** How many held records were looked at, and the first and the last of them (the same objects). */
  n: number;
  first: InHandEntry;
  last: InHandEntry;
  row: RowState;
}

interface LiveMemo {
  /** The stored row's version the live row was made from (a stored write moves it). */
  version: number;
  storedHead: number;
  /** How many held records it applied, and the first and last of them (the same objects). */
  n: number;
  first: InHandEntry;
  last: InHandEntry;
  row: RowState;
}

/**
 * liveRow made once per (user, conversation) and then moved by the records held since.
 *
 * The live view is computed for a watched user at every hand-off that touches the user, from the
 * stored row and every record held for it in the window (up to 5 s of them). liveRow applied all of
 * them again each time, sorted: a sender watching their own busy group (bench/gateway part a,
 * 5,000 sends/s) re-applied up to 25,000 records per hand-off — 9 % of the node's CPU in
 * `counts`. Here a row is reused while the stored row is the same (its version) and the held
 * records are the ones it applied followed by new ones (the held list only grows between flushes:
 * the same first and last record at the same places); a new record then costs one applyEntry.
 * Anything else — a stored write, a flush that took them, a record older than one already applied
 * (liveRow would sort it in) — makes it again with liveRow, which stays the definition.
 */
export class LiveRowCache {
  private readonly memo = new Map<string, LiveMemo>();

  constructor(private readonly max: number = LIVE_ROW_CACHE_MAX) {}

  /** liveRow(stored, held, userHex, cap) for the row `key` (tenant + user + conversation); a row of its own. */
  of(key: string, stored: RowState, held: readonly InHandEntry[], userHex: string, cap: number = UNREAD_PRECISE_LIMIT): RowState | null {
    const m = this.memo.get(key);
    if (m && m.version === stored.version && m.storedHead === stored.headSeq && m.n <= held.length && held[0] === m.first && held[m.n - 1] === m.last) {
      const r = { ...m.row };
      let ok = true;
      for (let i = m.n; i < held.length && ok; i++) {
        const e = held[i]!;
        if (e.membershipHex !== "" && namesUser(e.membershipHex, userHex)) return this.remember(key, stored, held, null);
        if (e.seq <= stored.headSeq) continue;
        // older than a record already applied: liveRow would apply it in its place
        if (e.seq <= r.headSeq) ok = false;
        else if (!applyEntry(r, e, userHex, cap)) return this.remember(key, stored, held, null);
      }
      if (ok) return this.remember(key, stored, held, r);
    }
    return this.remember(key, stored, held, liveRow(stored, held, userHex, cap));
  }

  private remember(key: string, stored: RowState, held: readonly InHandEntry[], row: RowState | null): RowState | null {
    if (row === null || held.length === 0) {
      this.memo.delete(key);
      return row;
    }
    if (this.memo.size >= this.max && !this.memo.has(key)) this.memo.clear();
    this.memo.set(key, { version: stored.version, storedHead: stored.headSeq, n: held.length, first: held[0]!, last: held[held.length - 1]!, row: { ...row } });
    return row;
  }
}
