/**
 * The JSON result of `drill rebuild`: the drill report (also the file --report writes) plus where
 * it was written. Declared here, field by field, as the CLI's contract (cli/result.ts says how):
 * the report core's RebuildDrill produces reaches the CLI through the admin API's DrillReport
 * message, and neither of those types may change what scripts read.
 */
import type { DrillReport } from "../../admin-api/client.js";
import { resultFrom } from "../result.js";

/** A JSON value a difference compares: unread counts, flags, sequences, ids; null when absent. */
export type DrillValue = string | number | boolean | null;

/** A value the server sends as JSON text; text that is not JSON is kept as it came. */
function drillValue(text: string): DrillValue {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === "string" || typeof v === "number" || typeof v === "boolean" ? v : null;
  } catch {
    return text;
  }
}

const drillDifferenceResult = resultFrom<DrillReport["differences"][number]>()({
  tenant: "wire",
  user: "wire",
  conversation: "wire",
  /**
   * presence, unread, unreadExact, headConversationSeq or lastActivityId (before the wipe → after
   * the rebuild); listPresence, listUnread, listUnreadExact, listMentions (the conversation list's
   * cached value → the definitional one); badgeTotalUnread, badgeTotalMention, badgeMutedUnread
   * (the stored badge → the sums over the definition; conversation "").
   */
  field: "wire",
  before: (d) => drillValue(d.beforeJson),
  after: (d) => drillValue(d.afterJson),
});
export type DrillDifferenceResult = ReturnType<typeof drillDifferenceResult>;

/** One user the drill checked. */
const drillUserResult = resultFrom<DrillReport["checkedUsers"][number]>()({
  tenant: "wire",
  user: "wire",
  conversationsBefore: "wire",
  conversationsAfter: "wire",
  /** Their list was merged back from the authority on their pull after the bump. */
  rebuilt: "wire",
});
export type DrillUserResult = ReturnType<typeof drillUserResult>;

export const drillReportResult = resultFrom<DrillReport>()({
  drillId: "wire",
  /** RFC 3339. */
  startedAt: "wire",
  finishedAt: "wire",
  /** projection, checkpoints or both. */
  wipe: "wire",
  /** What was wiped, in words. */
  scope: "wire",
  users: "wire",
  conversationsBefore: "wire",
  conversationsAfter: "wire",
  epochBefore: "u64",
  epochAfter: "u64",
  /** Pending registrations written to the authority before recording. */
  registrationsFlushed: "wire",
  /** Users whose list was merged back from the authority on their pull after the bump. */
  usersRebuilt: "wire",
  authority: "wire",
  /** Every user checked, in the order they were checked (`--junit` writes one test case each). */
  checkedUsers: (r) => r.checkedUsers.map(drillUserResult),
  /** Conversation-list rows compared with the definition (cached unread, mentions, badge). */
  listRowsCompared: "wire",
  differences: (r) => r.differences.map(drillDifferenceResult),
  ok: "wire",
});
export type DrillReportResult = ReturnType<typeof drillReportResult>;

/** What `drill rebuild --output json` prints: the report and where it was written. */
export interface DrillRunResult extends DrillReportResult {
  reportPath: string;
}
