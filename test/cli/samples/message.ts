/** Contract samples of `message send` (test/cli/result-samples.ts). */
import type MessageEdit from "../../../cli/commands/message/edit.js";
import type MessageReact from "../../../cli/commands/message/react.js";
import type MessageReactions from "../../../cli/commands/message/reactions.js";
import type MessageRecall from "../../../cli/commands/message/recall.js";
import type MessageSend from "../../../cli/commands/message/send.js";
import { samplesOf, type ResultOf } from "../result-samples.js";

export const samples = {
  "message send": samplesOf<ResultOf<typeof MessageSend>>(
    { group: "5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39", sender: "0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b", conversationSeq: 1, messageId: "01a22954-7c1e-7b3a-9f00-2d5e8c1b4a6f", version: 1, duplicate: false, attempts: 1 },
    { group: "5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39", sender: "0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b", conversationSeq: 1, messageId: null, version: 0, duplicate: true, attempts: 1 },
  ),
  "message recall": samplesOf<ResultOf<typeof MessageRecall>>(
    { group: "5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39", targetSeq: 42, eventSeq: 57, eventMessageId: "01a22954-7c1e-7b3a-9f00-2d5e8c1b4a70", duplicate: false },
    { group: "5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39", targetSeq: 42, eventSeq: 57, eventMessageId: null, duplicate: true },
  ),
  "message edit": samplesOf<ResultOf<typeof MessageEdit>>(
    { group: "5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39", targetSeq: 42, eventSeq: 58, eventMessageId: "01a22954-7c1e-7b3a-9f00-2d5e8c1b4a71", duplicate: false },
    { group: "5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39", targetSeq: 42, eventSeq: 58, eventMessageId: null, duplicate: true },
  ),
  "message react": samplesOf<ResultOf<typeof MessageReact>>(
    {
      group: "5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39", user: "0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b", key: "👍", action: "add", changed: true,
      summary: { conversationSeq: 42, summaryVersion: 3, counts: [{ key: "👍", count: 2 }, { key: "party", count: 1 }], detailRows: 3, withoutDetail: 0 },
    },
    {
      group: "5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39", user: "0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b", key: "party", action: "remove", changed: false,
      summary: { conversationSeq: 42, summaryVersion: 0, counts: [], detailRows: 0, withoutDetail: 0 },
    },
  ),
  "message reactions": samplesOf<ResultOf<typeof MessageReactions>>(
    {
      group: "5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39",
      summary: { conversationSeq: 42, summaryVersion: 3, counts: [{ key: "👍", count: 2 }, { key: "party", count: 1 }], detailRows: 2, withoutDetail: 1 },
      reactions: [
        { user: "0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b", key: "👍", reactedAtMs: 1780000000000 },
        { user: "6a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", key: "party", reactedAtMs: null },
      ],
      nextCursor: "1536",
    },
    { group: "5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39", summary: { conversationSeq: 7, summaryVersion: 0, counts: [], detailRows: 0, withoutDetail: 0 }, reactions: [], nextCursor: null },
  ),
};
