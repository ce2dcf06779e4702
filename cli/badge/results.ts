/** The JSON results of `badge show` and `badge reconcile`. */
import type { Badge, ReconcileBadgeResponse } from "../../admin-api/client.js";
import { badgeValues, type BadgeValues } from "../sessions/results.js";

export interface BadgeShowResult extends BadgeValues {
  user: string;
}

export function badgeShowResult(user: string, b: Badge): BadgeShowResult {
  return { user, ...badgeValues(b) };
}

export interface BadgeReconcileResult {
  user: string;
  /** The stored badge before; null when the user had none. */
  before: BadgeValues | null;
  after: BadgeValues;
  rows: number;
  driftedRows: number;
  unreadDrift: number;
  mentionsDrift: number;
}

export function badgeReconcileResult(user: string, r: ReconcileBadgeResponse): BadgeReconcileResult {
  return { user, before: r.before ? badgeValues(r.before) : null, after: badgeValues(r.after!), rows: r.rows, driftedRows: r.driftedRows, unreadDrift: r.unreadDrift, mentionsDrift: r.mentionsDrift };
}
