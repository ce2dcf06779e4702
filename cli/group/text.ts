/** Table-mode text of the `group` commands. */
import { keyValues, table } from "../format.js";
import type { GroupListResult, GroupResult, OwnerTransferResult } from "./results.js";

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

export function ownerTransferText(t: OwnerTransferResult): string {
  if (t.outcome === "noop") return `${t.owner} already owns group ${t.group}: nothing changed (version ${t.version})`;
  if (t.outcome === "planned") return `Dry run: would transfer group ${t.group} from ${t.previousOwner} to ${t.owner} at version ${t.version} (nothing changed)`;
  return `Transferred group ${t.group} from ${t.previousOwner} to ${t.owner}: version ${t.version}`;
}

export function groupListText(l: GroupListResult): string {
  const rows = table(["GROUP", "OWNER", "VERSION", "MEMBERS", "SEQ"], l.groups.map((g) => [g.group, g.owner, g.version, g.memberCount, g.conversationSeq]));
  return l.nextCursor === null ? rows : `${rows}\nmore: --cursor ${l.nextCursor}`;
}
