/** Table-mode text of `message send`. */
import type { AnchorCommandResult, SendResult } from "./results.js";

export function sentText(r: SendResult, clientMessageId: string): string {
  return r.duplicate
    ? `Nothing changed: client message id ${clientMessageId} was already committed to group ${r.group} as conversation seq ${r.conversationSeq}`
    : `Sent message ${r.messageId} to group ${r.group} as ${r.sender}: conversation seq ${r.conversationSeq}, member version ${r.version}`;
}

/** `message recall` / `message edit`. */
export function anchorText(r: AnchorCommandResult, verb: "recalled" | "edited"): string {
  return r.duplicate
    ? `Nothing changed: message ${r.targetSeq} of group ${r.group} already was ${verb} (event seq ${r.eventSeq})`
    : `${verb === "recalled" ? "Recalled" : "Edited"} message ${r.targetSeq} of group ${r.group}: event seq ${r.eventSeq} goes to every member; devices online get it now, the others when they sync`;
}
