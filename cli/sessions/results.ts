/**
 * The JSON results of `sessions` and `sessions watch` (docs/operator-guide.md); cli/result.ts says
 * how they are declared. A `sessions` page is one result read from two wire messages (the
 * conversation list's page, or with --group the groups' summaries): its fields are declared once,
 * as an interface, and each message has its mapping.
 */
import type { Badge, ConversationSummary, ListConversationSummariesResponse, ListConversationsResponse, ListEntry, ListRow, WatchUserEvent } from "../../admin-api/client.js";
import { optionalU64, resultFrom, u64 } from "../result.js";
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

export const rowResult = resultFrom<ListRow>()({
  group: "wire",
  lastActivityId: "text or null",
  headConversationSeq: "u64",
  unread: "wire",
  unreadExact: "wire",
  mentions: "wire",
  mentionFirstConversationSeq: "u64 or null",
  pinRank: "or null",
  muted: "wire",
  archived: "wire",
  hiddenBeforeConversationSeq: "u64",
  deletedBeforeConversationSeq: "u64",
  deleted: "wire",
  version: "u64",
});
export type RowResult = ReturnType<typeof rowResult>;

/** A user's badge; `badge show` and `badge reconcile` print it too. */
export const BADGE_FIELDS = { totalUnread: "wire", totalMention: "wire", mutedUnread: "wire", version: "u64" } as const;
export const badgeValues = resultFrom<Badge>()(BADGE_FIELDS);
export type BadgeValues = ReturnType<typeof badgeValues>;

/** One line of `sessions watch --output json`: a SESSION_DELTA frame (row) or a badge frame (badge). */
export const watchLine = resultFrom<WatchUserEvent>()({
  kind: (e): "delta" | "badge" => (e.frame?.$case === "badge" ? "badge" : "delta"),
  version: "u64",
  previousVersion: "u64",
  drivingEventId: "text or null",
  row: (e) => (e.frame?.$case === "delta" && e.frame.delta.row ? rowResult(e.frame.delta.row) : null),
  badge: (e) => (e.frame?.$case === "badge" ? badgeValues(e.frame.badge) : null),
});
export type WatchLine = ReturnType<typeof watchLine>;

/** A conversation as the session projection lists it (ListConversationSummaries without groups). */
const projectionSummaryResult = resultFrom<ConversationSummary>()({
  group: "wire",
  joinedAt: "u64",
  leftAt: "u64 or null",
  state: "wire",
  readConversationSeq: "u64",
  head: (s) => (s.head ? recordResult(s.head) : null),
  unread: "wire",
  unreadExact: "wire",
});

/** The session projection's own list (spec 002 §2.2, phase 1) with its epoch: the demo shows its rebuild after an epoch bump. */
export const projectionListResult = resultFrom<ListConversationSummariesResponse & { user: string }>()({
  user: "wire",
  epoch: "u64 or null",
  rebuilt: "or null",
  total: "or null",
  hidden: "or null",
  summaries: (r) => r.summaries.map(projectionSummaryResult),
});
export type ProjectionListResult = ReturnType<typeof projectionListResult>;
