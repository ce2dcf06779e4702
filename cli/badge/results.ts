/** The JSON results of `badge show` and `badge reconcile`; cli/result.ts says how they are declared. */
import type { Badge, ReconcileBadgeResponse } from "../../admin-api/client.js";
import { resultFrom } from "../result.js";
import { BADGE_FIELDS, badgeValues, type BadgeValues } from "../sessions/results.js";

export const badgeShowResult = resultFrom<Badge & { user: string }>()({ user: "wire", ...BADGE_FIELDS });
export type BadgeShowResult = ReturnType<typeof badgeShowResult>;

export const badgeReconcileResult = resultFrom<ReconcileBadgeResponse & { user: string }>()({
  user: "wire",
  /** The stored badge before; null when the user had none. */
  before: (r): BadgeValues | null => (r.before ? badgeValues(r.before) : null),
  after: (r) => badgeValues(r.after!),
  rows: "wire",
  driftedRows: "wire",
  unreadDrift: "wire",
  mentionsDrift: "wire",
});
export type BadgeReconcileResult = ReturnType<typeof badgeReconcileResult>;
