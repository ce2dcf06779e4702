/** Contract samples of `drill rebuild` (test/cli/result-samples.ts). */
import type DrillRebuild from "../../../cli/commands/drill/rebuild.js";
import { samplesOf, type ResultOf } from "../result-samples.js";

const report: ResultOf<typeof DrillRebuild> = {
  drillId: "01a229a3-9b9c-77d6-8e21-4c5d6e7f8091",
  startedAt: "2026-11-29T23:28:36.112Z",
  finishedAt: "2026-11-29T23:28:36.190Z",
  wipe: "projection",
  scope: "the sampled users' projection",
  users: 50,
  conversationsBefore: 311,
  conversationsAfter: 310,
  epochBefore: 4,
  epochAfter: 5,
  registrationsFlushed: 0,
  usersRebuilt: 50,
  authority: "cassandra 10.0.1.1 keyspace qim (consistency LOCAL_QUORUM)",
  checkedUsers: [
    { tenant: "8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c", user: "0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b", conversationsBefore: 7, conversationsAfter: 6, rebuilt: true },
    { tenant: "8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c", user: "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d", conversationsBefore: 5, conversationsAfter: 5, rebuilt: true },
  ],
  listRowsCompared: 12,
  differences: [
    { tenant: "8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c", user: "0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b", conversation: "5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39", field: "presence", before: true, after: false },
    { tenant: "8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c", user: "0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b", conversation: "7e6d5c4b-3a29-4180-9f7e-6d5c4b3a2918", field: "unread", before: 3, after: 2 },
    { tenant: "8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c", user: "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d", conversation: "7e6d5c4b-3a29-4180-9f7e-6d5c4b3a2918", field: "lastActivityId", before: "01a22954-7c1e-7b3a-9f00-2d5e8c1b4a6f", after: null },
    { tenant: "8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c", user: "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d", conversation: "6d5c4b3a-2918-4f7e-8d6c-5b4a39281706", field: "lastActivityId", before: null, after: "01a22955-0b2c-7d4e-8f10-3e6f9d2c5b7a" },
    { tenant: "8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c", user: "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d", conversation: "6d5c4b3a-2918-4f7e-8d6c-5b4a39281706", field: "listUnread", before: 7, after: 2 },
    { tenant: "8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c", user: "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d", conversation: "", field: "badgeTotalUnread", before: 9, after: 4 },
  ],
  ok: false,
  reportPath: "/builds/qim/drill.json",
};

export const samples = {
  "drill rebuild": samplesOf<ResultOf<typeof DrillRebuild>>(report, { ...report, conversationsAfter: 311, differences: [], ok: true }),
};
