/** Contract samples of `sessions` and `sessions watch` (test/cli/result-samples.ts). */
import type Sessions from "../../../cli/commands/sessions.js";
import type SessionsWatch from "../../../cli/commands/sessions/watch.js";
import { lineSamplesOf, samplesOf, type ResultOf } from "../result-samples.js";
import { deletedRow, sampleRow } from "./conversation.js";
import { controlRecord, dissolveRecord, textRecord } from "./history.js";

const user = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d";

export const samples = {
  sessions: samplesOf<ResultOf<typeof Sessions>>(
    {
      user, snapshotRevision: 3, projectionComplete: true, snapshotTruncated: false, maxConversationsPerUser: 5000, nextCursor: "CAMQAiIQAaIpVHwee3qfAC1ejBtKbyoQWwwfnj1KTCufHop9bFtKOQ", total: 60,
      summaries: [
        { group: "5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39", joinedAt: 1, leftAt: null, state: "ACTIVE", readConversationSeq: 0, head: textRecord, unread: 1, unreadExact: true, mentions: 1, pinned: true, pinRank: 0, muted: false, archived: false },
        { group: "7e6d5c4b-3a29-4180-9f7e-6d5c4b3a2918", joinedAt: 1, leftAt: null, state: "ACTIVE", readConversationSeq: 2, head: controlRecord, unread: 0, unreadExact: true, mentions: 0, pinned: false, pinRank: null, muted: true, archived: false },
        { group: "6d5c4b3a-2918-4f7e-8d6c-5b4a39281706", joinedAt: null, leftAt: null, state: null, readConversationSeq: null, head: null, unread: 200, unreadExact: false, mentions: 0, pinned: false, pinRank: null, muted: false, archived: true },
        { group: "4c3b2a19-0817-4f6e-9d5c-4b3a29180716", joinedAt: 0, leftAt: null, state: "ACTIVE", readConversationSeq: 3, head: dissolveRecord, unread: 0, unreadExact: true, mentions: 0, pinned: false, pinRank: null, muted: false, archived: false },
      ],
    },
    {
      user, snapshotRevision: null, projectionComplete: null, snapshotTruncated: null, maxConversationsPerUser: null, nextCursor: null, total: null,
      summaries: [{ group: "6d5c4b3a-2918-4f7e-8d6c-5b4a39281706", joinedAt: 0, leftAt: 1, state: "REMOVED", readConversationSeq: 0, head: null, unread: 0, unreadExact: true, mentions: null, pinned: null, pinRank: null, muted: null, archived: null }],
    },
    { user, snapshotRevision: 1, projectionComplete: false, snapshotTruncated: false, maxConversationsPerUser: 5000, nextCursor: null, total: 0, summaries: [] },
    { user, snapshotRevision: 2, projectionComplete: true, snapshotTruncated: true, maxConversationsPerUser: 5000, nextCursor: null, total: 5000, summaries: [] },
  ),
  "sessions watch": lineSamplesOf<ResultOf<typeof SessionsWatch>>(
    { kind: "badge", version: 12, previousVersion: 0, drivingEventId: null, row: null, badge: { totalUnread: 3, totalMention: 1, mutedUnread: 0, version: 12 } },
    { kind: "delta", version: 13, previousVersion: 12, drivingEventId: "5b0c1f9e3d4a4c2b9f1e8a7d6c5b4a39:8", row: sampleRow, badge: null },
    { kind: "delta", version: 14, previousVersion: 13, drivingEventId: "delete", row: deletedRow, badge: null },
  ),
};
