/** The JSON result of `sessions` (docs/operator-guide.md). */
import type { ConversationSummary, ListConversationSummariesResponse } from "../../admin-api/client.js";
import { optionalU64, u64 } from "../format.js";
import { recordResult, type RecordResult } from "../history/results.js";

export interface SummaryResult {
  group: string;
  joinedAt: number;
  leftAt: number | null;
  state: string;
  readConversationSeq: number;
  head: RecordResult | null;
  unread: number;
  unreadExact: boolean;
}

export function summaryResult(s: ConversationSummary): SummaryResult {
  return {
    group: s.group,
    joinedAt: u64(s.joinedAt),
    leftAt: optionalU64(s.leftAt),
    state: s.state,
    readConversationSeq: u64(s.readConversationSeq),
    head: s.head ? recordResult(s.head) : null,
    unread: s.unread,
    unreadExact: s.unreadExact,
  };
}

export interface SessionsResult {
  user: string;
  /** Listed from the projection (no --group): the epoch it was served at; null with --group. */
  epoch: number | null;
  /** Whether this pull merged the user's set back from the authority first; null with --group. */
  rebuilt: boolean | null;
  /** Conversations in the user's projection (the page may be shorter); null with --group. */
  total: number | null;
  /** Conversations of the page the user may not see (normally 0); null with --group. */
  hidden: number | null;
  summaries: SummaryResult[];
}

export function sessionsResult(user: string, r: ListConversationSummariesResponse): SessionsResult {
  return {
    user,
    epoch: optionalU64(r.epoch),
    rebuilt: r.rebuilt ?? null,
    total: r.total ?? null,
    hidden: r.hidden ?? null,
    summaries: r.summaries.map(summaryResult),
  };
}
