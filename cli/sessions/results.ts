/** The JSON results of `sessions` and `sessions watch` (docs/operator-guide.md). */
import type { Badge, ConversationSummary, ListConversationSummariesResponse, ListConversationsResponse, ListEntry, ListRow, WatchUserEvent } from "../../admin-api/client.js";
import { optionalU64, u64 } from "../format.js";
import { recordResult, type RecordResult } from "../history/results.js";

export interface SummaryResult {
  group: string;
  /** The member interval and read position; null when the user has no interval for the group. */
  joinedAt: number | null;
  leftAt: number | null;
  state: string | null;
  readConversationSeq: number | null;
  head: RecordResult | null;
  unread: number;
  unreadExact: boolean;
  /** From the conversation-list engine; null with --group (read from the groups directly). */
  mentions: number | null;
  pinned: boolean | null;
  pinRank: number | null;
  muted: boolean | null;
  archived: boolean | null;
}

export interface SessionsResult {
  user: string;
  /** The snapshot revision the page was cut from; null with --group. */
  snapshotRevision: number | null;
  /** False when the cursor named an older revision (this is the new first page: start again); null with --group. */
  projectionComplete: boolean | null;
  /** True when the user has more conversations than maxConversationsPerUser: the list (and --all) holds the first ones only; null with --group. */
  snapshotTruncated: boolean | null;
  /** The bound a snapshot is cut at (max_conversations_per_user, 5,000); null with --group. */
  maxConversationsPerUser: number | null;
  /** The --cursor of the next page; null on the last page, with --all and with --group. */
  nextCursor: string | null;
  /** Conversations in the user's snapshot; null with --group. */
  total: number | null;
  summaries: SummaryResult[];
}

function fromSummary(s: ConversationSummary | undefined) {
  return {
    joinedAt: s ? u64(s.joinedAt) : null, leftAt: s ? optionalU64(s.leftAt) : null, state: s?.state ?? null,
    readConversationSeq: s ? u64(s.readConversationSeq) : null, head: s?.head ? recordResult(s.head) : null,
  };
}

export function entryResult(e: ListEntry): SummaryResult {
  const r = e.row!;
  return {
    group: r.group, ...fromSummary(e.summary), unread: r.unread, unreadExact: r.unreadExact,
    mentions: r.mentions, pinned: r.pinRank !== undefined, pinRank: r.pinRank ?? null, muted: r.muted, archived: r.archived,
  };
}

export function pageResult(user: string, r: ListConversationsResponse): SessionsResult {
  return {
    user, snapshotRevision: u64(r.snapshotRevision), projectionComplete: r.projectionComplete,
    snapshotTruncated: r.snapshotTruncated, maxConversationsPerUser: r.maxConversationsPerUser, nextCursor: r.nextCursor ?? null, total: r.total,
    summaries: r.entries.map(entryResult),
  };
}

/** --group: the groups read directly (definitional unread), without the conversation-list engine. */
export function groupsResult(user: string, r: ListConversationSummariesResponse): SessionsResult {
  return {
    user, snapshotRevision: null, projectionComplete: null, snapshotTruncated: null, maxConversationsPerUser: null, nextCursor: null, total: null,
    summaries: r.summaries.map((s) => ({ group: s.group, ...fromSummary(s), unread: s.unread, unreadExact: s.unreadExact, mentions: null, pinned: null, pinRank: null, muted: null, archived: null })),
  };
}

export interface RowResult {
  group: string;
  lastActivityId: string | null;
  headConversationSeq: number;
  unread: number;
  unreadExact: boolean;
  mentions: number;
  mentionFirstConversationSeq: number | null;
  pinRank: number | null;
  muted: boolean;
  archived: boolean;
  hiddenBeforeConversationSeq: number;
  deletedBeforeConversationSeq: number;
  deleted: boolean;
  version: number;
}

export function rowResult(r: ListRow): RowResult {
  return {
    group: r.group, lastActivityId: r.lastActivityId || null, headConversationSeq: u64(r.headConversationSeq), unread: r.unread, unreadExact: r.unreadExact,
    mentions: r.mentions, mentionFirstConversationSeq: optionalU64(r.mentionFirstConversationSeq), pinRank: r.pinRank ?? null, muted: r.muted, archived: r.archived,
    hiddenBeforeConversationSeq: u64(r.hiddenBeforeConversationSeq), deletedBeforeConversationSeq: u64(r.deletedBeforeConversationSeq), deleted: r.deleted, version: u64(r.version),
  };
}

export interface BadgeValues {
  totalUnread: number;
  totalMention: number;
  mutedUnread: number;
  version: number;
}

export function badgeValues(b: Badge): BadgeValues {
  return { totalUnread: b.totalUnread, totalMention: b.totalMention, mutedUnread: b.mutedUnread, version: u64(b.version) };
}

/** One line of `sessions watch --output json`: a SESSION_DELTA frame (row) or a badge frame (badge). */
export interface WatchLine {
  kind: "delta" | "badge";
  version: number;
  previousVersion: number;
  drivingEventId: string | null;
  row: RowResult | null;
  badge: BadgeValues | null;
}

export function watchLine(e: WatchUserEvent): WatchLine {
  const head = { version: u64(e.version), previousVersion: u64(e.previousVersion), drivingEventId: e.drivingEventId || null };
  if (e.frame?.$case === "badge") return { kind: "badge", ...head, row: null, badge: badgeValues(e.frame.badge) };
  return { kind: "delta", ...head, row: e.frame?.$case === "delta" && e.frame.delta.row ? rowResult(e.frame.delta.row) : null, badge: null };
}

/** A conversation as the session projection lists it (ListConversationSummaries without groups). */
export interface ProjectionSummaryResult {
  group: string;
  joinedAt: number;
  leftAt: number | null;
  state: string;
  readConversationSeq: number;
  head: RecordResult | null;
  unread: number;
  unreadExact: boolean;
}

/** The session projection's own list (spec 002 §2.2, phase 1) with its epoch: the demo shows its rebuild after an epoch bump. */
export interface ProjectionListResult {
  user: string;
  epoch: number | null;
  rebuilt: boolean | null;
  total: number | null;
  hidden: number | null;
  summaries: ProjectionSummaryResult[];
}

export function projectionListResult(user: string, r: ListConversationSummariesResponse): ProjectionListResult {
  return {
    user, epoch: optionalU64(r.epoch), rebuilt: r.rebuilt ?? null, total: r.total ?? null, hidden: r.hidden ?? null,
    summaries: r.summaries.map((s) => ({
      group: s.group, joinedAt: u64(s.joinedAt), leftAt: optionalU64(s.leftAt), state: s.state, readConversationSeq: u64(s.readConversationSeq),
      head: s.head ? recordResult(s.head) : null, unread: s.unread, unreadExact: s.unreadExact,
    })),
  };
}
