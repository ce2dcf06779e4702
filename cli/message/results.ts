/** The JSON result of `message send` (docs/operator-guide.md); cli/result.ts says how it is declared. */
import type { SendMessageResponse } from "../../admin-api/client.js";
import { resultFrom } from "../result.js";

export const sendResult = resultFrom<SendMessageResponse & { group: string; sender: string }>()({
  group: "wire",
  sender: "wire",
  conversationSeq: "u64",
  messageId: "text or null",
  /** The member version the audience was frozen at (0 for a duplicate). */
  version: "u64",
  duplicate: "wire",
  attempts: "wire",
});
export type SendResult = ReturnType<typeof sendResult>;
