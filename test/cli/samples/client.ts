/** Contract samples of `qimctl client --output json`: one object per frame, as it arrives (test/cli/result-samples.ts). */
import type { ClientLine } from "../../../cli/commands/client.js";
import { freeForm, lineSamplesOf } from "../result-samples.js";

export const samples = {
  client: lineSamplesOf<ClientLine>(
    { at: "2026-12-03T07:00:00.123Z", frame: "sendAck", requestId: 2, body: freeForm({ conversationSeq: 1, messageId: "0193e2c1-7a4b-7c2d-9e1f-0a1b2c3d4e5f", duplicate: false }) },
    { at: "2026-12-03T07:00:00.140Z", frame: "message", requestId: 0, body: freeForm({ group: "5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39", conversationSeq: 1, payload: "hello" }) },
  ),
};
