/** Table-mode text of `message send`. */
import type { SendResult } from "./results.js";

export function sentText(r: SendResult, clientMessageId: string): string {
  return r.duplicate
    ? `Nothing changed: client message id ${clientMessageId} was already committed to group ${r.group} as conversation seq ${r.conversationSeq}`
    : `Sent message ${r.messageId} to group ${r.group} as ${r.sender}: conversation seq ${r.conversationSeq}, member version ${r.version}`;
}
