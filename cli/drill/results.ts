/**
 * The JSON result of `drill rebuild`: the drill report (also the file --report writes) plus where
 * it was written. Declared here, field by field, as the CLI's contract: the report core's
 * RebuildDrill produces reaches the CLI through the admin API's DrillReport message, and neither
 * of those types may change what scripts read.
 */
import type { DrillReport } from "../../admin-api/client.js";
import { u64 } from "../format.js";

/** A JSON value a difference compares: unread counts, flags, sequences, ids; null when absent. */
export type DrillValue = string | number | boolean | null;

export interface DrillDifferenceResult {
  tenant: string;
  user: string;
  conversation: string;
  /**
   * presence, unread, unreadExact, headConversationSeq or lastActivityId (before the wipe → after
   * the rebuild); listPresence, listUnread, listUnreadExact, listMentions (the conversation list's
   * cached value → the definitional one); badgeTotalUnread, badgeTotalMention, badgeMutedUnread
   * (the stored badge → the sums over the definition; conversation "").
   */
  field: string;
  before: DrillValue;
  after: DrillValue;
}

/** One user the drill checked. */
export interface DrillUserResult {
  tenant: string;
  user: string;
  conversationsBefore: number;
  conversationsAfter: number;
  /** Their list was merged back from the authority on their pull after the bump. */
  rebuilt: boolean;
}

export interface DrillReportResult {
  drillId: string;
  /** RFC 3339. */
  startedAt: string;
  finishedAt: string;
  /** projection, checkpoints or both. */
  wipe: string;
  /** What was wiped, in words. */
  scope: string;
  users: number;
  conversationsBefore: number;
  conversationsAfter: number;
  epochBefore: number;
  epochAfter: number;
  /** Pending registrations written to the authority before recording. */
  registrationsFlushed: number;
  /** Users whose list was merged back from the authority on their pull after the bump. */
  usersRebuilt: number;
  authority: string;
  /** Every user checked, in the order they were checked (`--junit` writes one test case each). */
  checkedUsers: DrillUserResult[];
  /** Conversation-list rows compared with the definition (cached unread, mentions, badge). */
  listRowsCompared: number;
  differences: DrillDifferenceResult[];
  ok: boolean;
}

/** What `drill rebuild --output json` prints: the report and where it was written. */
export interface DrillRunResult extends DrillReportResult {
  reportPath: string;
}

/** A value the server sends as JSON text; text that is not JSON is kept as it came. */
function drillValue(text: string): DrillValue {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === "string" || typeof v === "number" || typeof v === "boolean" ? v : null;
  } catch {
    return text;
  }
}

export function drillReportResult(r: DrillReport): DrillReportResult {
  return {
    drillId: r.drillId,
    startedAt: r.startedAt,
    finishedAt: r.finishedAt,
    wipe: r.wipe,
    scope: r.scope,
    users: r.users,
    conversationsBefore: r.conversationsBefore,
    conversationsAfter: r.conversationsAfter,
    epochBefore: u64(r.epochBefore),
    epochAfter: u64(r.epochAfter),
    registrationsFlushed: r.registrationsFlushed,
    usersRebuilt: r.usersRebuilt,
    authority: r.authority,
    checkedUsers: r.checkedUsers.map((u) => ({ tenant: u.tenant, user: u.user, conversationsBefore: u.conversationsBefore, conversationsAfter: u.conversationsAfter, rebuilt: u.rebuilt })),
    listRowsCompared: r.listRowsCompared,
    differences: r.differences.map((d) => ({ tenant: d.tenant, user: d.user, conversation: d.conversation, field: d.field, before: drillValue(d.beforeJson), after: drillValue(d.afterJson) })),
    ok: r.ok,
  };
}
