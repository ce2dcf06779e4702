/** The JSON result of `message send` (docs/operator-guide.md). */
import type { SendMessageResponse } from "../../admin-api/client.js";
import { nonEmpty, u64 } from "../format.js";

export interface SendResult {
  group: string;
  sender: string;
  conversationSeq: number;
  messageId: string | null;
  /** The member version the audience was frozen at (0 for a duplicate). */
  version: number;
  duplicate: boolean;
  attempts: number;
}

export function sendResult(group: string, sender: string, r: SendMessageResponse): SendResult {
  return { group, sender, conversationSeq: u64(r.conversationSeq), messageId: nonEmpty(r.messageId), version: u64(r.version), duplicate: r.duplicate, attempts: r.attempts };
}
