import { table } from "../format.js";
import type { UnreadAuditResult } from "./results.js";

export function unreadAuditText(r: UnreadAuditResult): string {
  const head = `sampled ${r.sampled} of ${r.candidates} idle row(s) with unread (rate ${r.sampleRate}, idle ≥ ${r.idleMs / 3_600_000} h) over ${r.usersScanned} user(s): ${r.drifted} drifted, unread_drift_ratio ${r.driftRatio}`;
  if (r.drifts.length === 0) return head;
  return `${head}\n${table(["USER", "GROUP", "CACHED", "DEFINITION", "CACHED_@", "DEFINITION_@"], r.drifts.map((d) => [d.user, d.group, d.cachedUnread, d.definitionalUnread, d.cachedMentions, d.definitionalMentions]))}`;
}
