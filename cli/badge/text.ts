import { keyValues } from "../format.js";
import type { BadgeReconcileResult, BadgeShowResult } from "./results.js";

export function badgeShowText(b: BadgeShowResult): string {
  return keyValues([["user", b.user], ["total unread", b.totalUnread], ["total mention", b.totalMention], ["muted unread", b.mutedUnread], ["version", b.version]]);
}

export function badgeReconcileText(r: BadgeReconcileResult): string {
  const before = r.before ? `${r.before.totalUnread} unread, ${r.before.totalMention} mention(s)` : "none stored";
  return `Reconciled user ${r.user}: ${r.rows} row(s) recomputed from the definition, ${r.driftedRows} had drifted (unread off by ${r.unreadDrift}, mentions by ${r.mentionsDrift}); badge ${before} -> ${r.after.totalUnread} unread, ${r.after.totalMention} mention(s), ${r.after.mutedUnread} muted unread (version ${r.after.version})`;
}
