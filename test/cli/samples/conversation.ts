/** Contract samples of `conversation <action>` (test/cli/result-samples.ts). */
import type ConversationClear from "../../../cli/commands/conversation/clear.js";
import { samplesOf, type ResultOf } from "../result-samples.js";
import type { RowResult } from "../../../cli/sessions/results.js";
import type { ActionName } from "../../../cli/conversation/action.js";

const user = "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d";
const group = "5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39";
export const sampleRow: RowResult = {
  group, lastActivityId: "01a229547c1e7b3a9f002d5e8c1b4a6f", headConversationSeq: 7, unread: 2, unreadExact: true, mentions: 1, mentionFirstConversationSeq: 6,
  pinRank: 0, muted: false, archived: false, hiddenBeforeConversationSeq: 0, deletedBeforeConversationSeq: 0, deleted: false, version: 12,
};
export const deletedRow: RowResult = { ...sampleRow, lastActivityId: null, unread: 0, mentions: 0, mentionFirstConversationSeq: null, pinRank: null, deletedBeforeConversationSeq: 7, deleted: true, version: 13 };

const of = (action: ActionName) => samplesOf<ResultOf<typeof ConversationClear>>({ user, group, action, row: sampleRow }, { user, group, action, row: deletedRow });

export const samples = Object.fromEntries((["clear", "delete", "pin", "unpin", "mute", "unmute", "archive", "unarchive"] as const).map((a) => [`conversation ${a}`, of(a)]));
