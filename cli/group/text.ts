/** Table-mode text of the `group` commands. */
import { keyValues } from "../format.js";
import type { GroupResult } from "./results.js";

export function createdText(g: GroupResult): string {
  return `Created group ${g.group} (owner ${g.owner}) with ${g.memberCount} member(s): version ${g.version}`;
}

export function groupText(g: GroupResult): string {
  return keyValues([
    ["group", g.group],
    ["tenant", g.tenant],
    ["owner", g.owner],
    ["version", g.version],
    ["members", g.memberCount],
    ["conversation seq", g.conversationSeq],
    ["created", new Date(g.createdAtMs).toISOString()],
  ]);
}
