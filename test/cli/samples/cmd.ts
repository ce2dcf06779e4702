/** Contract samples of the `cmd` commands (test/cli/result-samples.ts). */
import type CmdAck from "../../../cli/commands/cmd/ack.js";
import type CmdFlush from "../../../cli/commands/cmd/flush.js";
import type CmdOwner from "../../../cli/commands/cmd/owner.js";
import type CmdPending from "../../../cli/commands/cmd/pending.js";
import type CmdSend from "../../../cli/commands/cmd/send.js";
import type CmdState from "../../../cli/commands/cmd/state.js";
import type CmdStatus from "../../../cli/commands/cmd/status.js";
import type CmdSync from "../../../cli/commands/cmd/sync.js";
import { samplesOf, type ResultOf } from "../result-samples.js";

const who = { tenant: "8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c", user: "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f" };
const message = {
  channelId: "5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39____cmd", channelType: 2, messageSeq: 9, messageId: "019a7f3e-2b1c-7d4e-8f9a-0b1c2d3e4f5a",
  clientMsgNo: "deploy-42", from: "0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b", timestampMs: 1795990116099, redDot: true, syncOnce: false, noPersist: false,
  payloadBase64: "cmVsb2Fk", text: "reload", recipients: ["0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b", "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f"],
};

/** A system command (no sender) with a binary payload. */
const systemMessage = { ...message, messageSeq: 10, from: null, text: null, payloadBase64: "//4A", clientMsgNo: "0a1b2c3d" };

export const samples = {
  "cmd send": samplesOf<ResultOf<typeof CmdSend>>(
    { tenant: who.tenant, message, duplicate: false, intentAccepted: true },
    { tenant: who.tenant, message: { ...systemMessage, messageSeq: 0, noPersist: true, recipients: [] }, duplicate: true, intentAccepted: false },
  ),
  "cmd sync": samplesOf<ResultOf<typeof CmdSync>>(
    { ...who, messages: [message, systemMessage], generation: 3, servedBy: "node-1" },
    { ...who, messages: [], generation: 4, servedBy: null },
    { ...who, messages: [message], generation: null, servedBy: "node-1" },
  ),
  "cmd ack": samplesOf<ResultOf<typeof CmdAck>>(
    { ...who, generation: 3, advanced: 1, cleared: 1, warning: null, servedBy: "node-1" },
    { ...who, generation: 4, advanced: 0, cleared: 0, warning: "clearing the pending entries failed: …", servedBy: null },
    { ...who, generation: null, advanced: 0, cleared: 0, warning: null, servedBy: null },
  ),
  "cmd pending": samplesOf<ResultOf<typeof CmdPending>>(
    { ...who, entries: [{ channelId: message.channelId, channelType: 2, lastMsgSeq: 9, activeAtMs: 1795990116099, readSeq: 0 }], servedBy: "node-1" },
    { ...who, entries: [], servedBy: null },
  ),
  "cmd state": samplesOf<ResultOf<typeof CmdState>>(
    { ...who, rows: [{ channelId: message.channelId, channelType: 2, readSeq: 9, deletedToSeq: 0, activeAtMs: 1795990116099, updatedAtMs: 1795990117000 }] },
    { ...who, rows: [] },
  ),
  "cmd owner": samplesOf<ResultOf<typeof CmdOwner>>(
    { ...who, slot: 17, nodeId: "node-1", address: "localhost:7601", token: 3, alive: true, clustered: true },
    { ...who, slot: 17, nodeId: null, address: null, token: 0, alive: false, clustered: false },
  ),
  "cmd flush": samplesOf<ResultOf<typeof CmdFlush>>(
    { nodeId: "node-1", rows: 120, batches: 1, failedBatches: 0 },
    { nodeId: "", rows: 0, batches: 0, failedBatches: 0 },
  ),
  "cmd status": samplesOf<ResultOf<typeof CmdStatus>>(
    {
      answeredBy: "node-1", pendingEntries: 12,
      badFiles: [
        { nodeId: "node-1", path: "/var/lib/qim/node-1/conversationv2/cmd_conversation_updates.json.bad", setAsideAt: "2026-12-01T19:58:29.000Z" },
        { nodeId: "node-3", path: "/var/lib/qim/node-3/conversationv2/cmd_conversation_updates.json.bad", setAsideAt: null },
      ],
    },
    { answeredBy: null, pendingEntries: 0, badFiles: [{ nodeId: null, path: "/var/lib/qim/conversationv2/cmd_conversation_updates.json.bad", setAsideAt: "2026-12-01T19:58:29.000Z" }] },
    { answeredBy: "node-2", pendingEntries: 0, badFiles: [] },
  ),
};
