/** Contract samples of `history` (test/cli/result-samples.ts), and a record for the topics that show one. */
import type History from "../../../cli/commands/history.js";
import { samplesOf, type ResultOf } from "../result-samples.js";
import type { RecordResult } from "../../../cli/history/results.js";

export const controlRecord: RecordResult = {
  conversationSeq: 2,
  messageId: "01a22954-7c1e-7b3a-9f00-2d5e8c1b4a6f",
  senderId: "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f",
  kind: "control",
  countsUnread: false,
  createdAtMs: 1795989713291,
  contentType: "qim.membership.v1",
  text: null,
  payloadBase64: "AQAA",
  membership: { op: "join", actor: "00000000-0000-0000-0000-000000000000", users: ["9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"] },
  groupEvent: null,
  state: null,
  recallEventSeq: null,
  targetSeq: null,
};

export const textRecord: RecordResult = {
  conversationSeq: 3,
  messageId: "01a22955-0b2c-7d4e-8f10-3e6f9d2c5b7a",
  senderId: "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f",
  kind: "normal",
  countsUnread: true,
  createdAtMs: 1795989714002,
  contentType: "text/plain",
  text: "hello",
  payloadBase64: "aGVsbG8=",
  membership: null,
  groupEvent: null,
  state: null,
  recallEventSeq: null,
  targetSeq: null,
};

/** A recalled message (payload gone) and its recall event (issue 29). */
export const recalledRecord: RecordResult = {
  ...textRecord, conversationSeq: 5, text: "", payloadBase64: "", state: "recalled", recallEventSeq: 6,
};
export const recallEventRecord: RecordResult = {
  ...textRecord, conversationSeq: 6, kind: "control", countsUnread: false, contentType: "qim.recall.v1", text: null, payloadBase64: "", targetSeq: 5,
};

/** The last record of a dissolved group (group dissolve). */
export const dissolveRecord: RecordResult = {
  conversationSeq: 4,
  messageId: "01a22956-1c3d-7e5f-9a21-4f7a0e3d6c8b",
  senderId: "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f",
  kind: "control",
  countsUnread: false,
  createdAtMs: 1795989715113,
  contentType: "qim.group.v1",
  text: null,
  payloadBase64: "AQAAAAAAAAAAAAAAAAAAAAA=",
  membership: null,
  groupEvent: { op: "dissolve", actor: "00000000-0000-0000-0000-000000000000" },
  state: null,
  recallEventSeq: null,
  targetSeq: null,
};

export const samples = {
  history: samplesOf<ResultOf<typeof History>>(
    {
      group: "5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39",
      user: "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d",
      joinedAt: 1,
      leftAt: null,
      state: "ACTIVE",
      earliestAvailableConversationSeq: 2,
      records: [controlRecord, textRecord, recalledRecord, recallEventRecord, dissolveRecord],
    },
    {
      group: "5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39",
      user: "0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b",
      joinedAt: 0,
      leftAt: 5,
      state: "REMOVED",
      earliestAvailableConversationSeq: 1,
      records: [],
    },
  ),
};
