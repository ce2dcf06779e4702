/** The JSON result of `message send` (docs/operator-guide.md); cli/result.ts says how it is declared. */
import type { AnchorEventResponse, SendMessageResponse } from "../../admin-api/client.js";
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

/** `message recall` and `message edit` (issue 29). */
export const anchorResult = resultFrom<AnchorEventResponse & { group: string }>()({
  group: "wire",
  /** The message recalled or edited. */
  targetSeq: "u64",
  /** The event's own conversation_seq (what devices receive). */
  eventSeq: "u64",
  /** null when the answer found the recall done before. */
  eventMessageId: "text or null",
  /** The event was written before (a retry, or a second recall): nothing new was written. */
  duplicate: "wire",
});
export type AnchorCommandResult = ReturnType<typeof anchorResult>;
