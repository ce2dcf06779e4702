import { table } from "../format.js";
import type { UnreadAuditResult } from "./results.js";

export function unreadAuditText(r: UnreadAuditResult): string {
  const head = `sampled ${r.sampled} of ${r.candidates} idle row(s) with unread (rate ${r.sampleRate}, idle ≥ ${r.idleMs / 3_600_000} h) over ${r.usersScanned} user(s): ${r.drifted} drifted, unread_drift_ratio ${r.driftRatio}`;
  if (r.drifts.length === 0) return head;
  return `${head}\n${table(["USER", "GROUP", "CACHED UNREAD", "DEFINITIONAL UNREAD", "CACHED MENTIONS", "DEFINITIONAL MENTIONS"], r.drifts.map((d) => [d.user, d.group, d.cachedUnread, d.definitionalUnread, d.cachedMentions, d.definitionalMentions]))}`;
}

/** The error on stderr of an audit that found drift: how many, the first rows, what corrects it. */
export function driftMessage(r: UnreadAuditResult): string {
  const first = r.drifts.slice(0, 5).map((d) => `user ${d.user} group ${d.group} cached ${d.cachedUnread} definition ${d.definitionalUnread}`).join("; ");
  return `unread audit: ${r.drifted} of ${r.sampled} sampled row(s) drifted (unread_drift_ratio ${r.driftRatio}): ${first}${r.drifts.length > 5 ? "; …" : ""}; qimctl badge reconcile --user U corrects a user`;
}
