/** Contract samples of `sessions` (cli/contract.ts). */
import type Sessions from "../commands/sessions.js";
import { samplesOf, type ResultOf } from "../contract.js";
import { controlRecord, textRecord } from "../history/samples.js";

export const samples = {
  sessions: samplesOf<ResultOf<typeof Sessions>>(
    {
      user: "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d",
      epoch: 3,
      rebuilt: false,
      total: 2,
      hidden: 0,
      summaries: [
        { group: "5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39", joinedAt: 1, leftAt: null, state: "ACTIVE", readConversationSeq: 0, head: textRecord, unread: 1, unreadExact: true },
        { group: "7e6d5c4b-3a29-4180-9f7e-6d5c4b3a2918", joinedAt: 1, leftAt: null, state: "ACTIVE", readConversationSeq: 2, head: controlRecord, unread: 0, unreadExact: true },
        { group: "6d5c4b3a-2918-4f7e-8d6c-5b4a39281706", joinedAt: 0, leftAt: 1, state: "REMOVED", readConversationSeq: 0, head: null, unread: 200, unreadExact: false },
      ],
    },
    { user: "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d", epoch: null, rebuilt: null, total: null, hidden: null, summaries: [] },
  ),
};
