/** Table-mode text of `drill rebuild`, and the message of its failure. */
import { keyValues, table } from "../format.js";
import type { DrillReportResult, DrillRunResult } from "./results.js";

/** The headline and the indented summary of a drill (with where --junit wrote its XML, when given). */
export function drillText(r: DrillRunResult, junitPath?: string): string {
  return [
    `Drill ${r.drillId}: ${r.ok ? "OK, no difference" : `${r.differences.length} DIFFERENCE(S)`}`,
    keyValues([
      ["users", r.users],
      ["conversations", `${r.conversationsBefore} before, ${r.conversationsAfter} after`],
      ["wiped", r.scope],
      ["epoch", `${r.epochBefore} -> ${r.epochAfter}`],
      ["users rebuilt", r.usersRebuilt],
      ["conversation list", `${r.listRowsCompared} rows compared with the definition (unread, mentions, badge): ${r.differences.filter((d) => d.field.startsWith("list") || d.field.startsWith("badge")).length} mismatch(es)`],
      ["registrations flushed", r.registrationsFlushed],
      ["authority", r.authority],
      ["report", r.reportPath],
      ...(junitPath !== undefined ? [["junit", junitPath] as const] : []),
    ]).replace(/^/gm, "  "),
  ].join("\n");
}

/** One line per difference: who, which conversation, which field, before → after. */
export function differencesText(r: DrillReportResult): string {
  return table(
    ["USER", "CONVERSATION", "FIELD", "BEFORE", "AFTER"],
    r.differences.map((d) => [d.user, d.conversation, d.field, JSON.stringify(d.before), JSON.stringify(d.after)]),
  );
}

/** The error on stderr of a drill that found differences: counts, the first ten, the report. */
export function differencesMessage(r: DrillRunResult): string {
  const users = new Set(r.differences.map((d) => d.user));
  const first = r.differences.slice(0, 10).map((d) => `user ${d.user} conversation ${d.conversation} ${d.field}`).join("; ");
  return `drill ${r.drillId}: ${r.differences.length} difference(s) for ${users.size} user(s): ${first}${r.differences.length > 10 ? "; …" : ""} (report ${r.reportPath})`;
}
