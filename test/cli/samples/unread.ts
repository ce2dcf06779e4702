/** Contract samples of `unread audit` (test/cli/result-samples.ts). */
import type UnreadAudit from "../../../cli/commands/unread/audit.js";
import { samplesOf, type ResultOf } from "../result-samples.js";

export const samples = {
  "unread audit": samplesOf<ResultOf<typeof UnreadAudit>>(
    {
      sampleRate: 0.5, idleMs: 86_400_000, usersScanned: 3, candidates: 4, sampled: 2, drifted: 1, driftRatio: 0.5,
      drifts: [{ tenant: "5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39", user: "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d", group: "7e6d5c4b-3a29-4180-9f7e-6d5c4b3a2918", cachedUnread: 5, definitionalUnread: 4, cachedMentions: 0, definitionalMentions: 0 }],
    },
    { sampleRate: 0.01, idleMs: 86_400_000, usersScanned: 0, candidates: 0, sampled: 0, drifted: 0, driftRatio: 0, drifts: [] },
  ),
};
