/** Contract samples of `badge show|reconcile` (test/cli/result-samples.ts). */
import type BadgeReconcile from "../../../cli/commands/badge/reconcile.js";
import type BadgeShow from "../../../cli/commands/badge/show.js";
import { samplesOf, type ResultOf } from "../result-samples.js";

const user = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d";

export const samples = {
  "badge show": samplesOf<ResultOf<typeof BadgeShow>>({ user, totalUnread: 12, totalMention: 1, mutedUnread: 3, version: 41 }),
  "badge reconcile": samplesOf<ResultOf<typeof BadgeReconcile>>(
    { user, before: { totalUnread: 13, totalMention: 1, mutedUnread: 3, version: 41 }, after: { totalUnread: 12, totalMention: 1, mutedUnread: 3, version: 42 }, rows: 40, driftedRows: 1, unreadDrift: 1, mentionsDrift: 0 },
    { user, before: null, after: { totalUnread: 0, totalMention: 0, mutedUnread: 0, version: 1 }, rows: 0, driftedRows: 0, unreadDrift: 0, mentionsDrift: 0 },
  ),
};
