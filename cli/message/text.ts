/** Table-mode text of `message send`. */
import { visible } from "../format.js";
import type { AnchorCommandResult, ReactCommandResult, ReactionsCommandResult, SendResult } from "./results.js";

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

function countsText(s: ReactionsCommandResult["summary"]): string {
  return s.counts.length === 0 ? "no reactions" : s.counts.map((c) => `${visible(c.key)} ${c.count}`).join("  ");
}

/** `message react`. */
export function reactText(r: ReactCommandResult): string {
  const head = r.changed
    ? `${r.action === "add" ? "Added" : "Removed"} ${visible(r.key)} as ${r.user} on message ${r.summary.conversationSeq} of group ${r.group}`
    : `Nothing changed: ${r.user} ${r.action === "add" ? "already had" : "had no"} ${visible(r.key)} on message ${r.summary.conversationSeq} of group ${r.group}`;
  return `${head}\nReactions (version ${r.summary.summaryVersion}): ${countsText(r.summary)}`;
}

/** `message reactions`. */
export function reactionsText(r: ReactionsCommandResult): string {
  const s = r.summary;
  const lines = [`Message ${s.conversationSeq} of group ${r.group}: ${countsText(s)} (version ${s.summaryVersion}; ${s.detailRows} with who, ${s.withoutDetail} counted only)`];
  for (const x of r.reactions) lines.push(`  ${x.user}  ${visible(x.key)}  ${x.reactedAtMs === null ? "(counted only)" : new Date(x.reactedAtMs).toISOString()}`);
  if (r.nextCursor !== null) lines.push(`More: --cursor ${r.nextCursor}`);
  return lines.join("\n");
}
