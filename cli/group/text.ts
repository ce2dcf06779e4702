/** Table-mode text of the `group` commands. */
import { keyValues, table, visible } from "../format.js";
import type { DissolutionResult, GroupListResult, GroupResult, OwnerTransferResult } from "./results.js";

export function createdText(g: GroupResult): string {
  return `Created group ${g.group} (owner ${g.owner}) with ${g.memberCount} member(s): version ${g.version}`;
}

export function groupText(g: GroupResult): string {
  return keyValues([
    ["group", g.group],
    ["tenant", g.tenant],
    ["owner", g.owner],
    ["version", g.version],
    ["members", g.maxMembers === 0 ? g.memberCount : `${g.memberCount} (at most ${g.maxMembers}: groups.max_members)`],
    ["conversation seq", g.conversationSeq],
    ["created", new Date(g.createdAtMs).toISOString()],
    ["state", g.state],
    ...(g.dissolvedAt !== null ? [["dissolved at", g.dissolvedAt] as [string, number]] : []),
  ]);
}

export function ownerTransferText(t: OwnerTransferResult): string {
  if (t.outcome === "noop") return `${t.owner} already owns group ${t.group}: nothing changed (version ${t.version})`;
  if (t.outcome === "planned") return `Dry run: would transfer group ${t.group} from ${t.previousOwner} to ${t.owner} at version ${t.version} (nothing changed)`;
  return `Transferred group ${t.group} from ${t.previousOwner} to ${t.owner}: version ${t.version}`;
}

export function groupListText(l: GroupListResult): string {
  const rows = table(["GROUP", "OWNER", "VERSION", "MEMBERS", "SEQ", "STATE"], l.groups.map((g) => [g.group, g.owner, g.version, g.memberCount, g.conversationSeq, g.state]));
  return l.nextCursor === null ? rows : `${rows}\nmore: --cursor ${l.nextCursor}`;
}

export function dissolutionText(d: DissolutionResult): string {
  if (d.outcome === "noop") return `Group ${d.group} already was dissolved at conversation_seq ${d.dissolvedAt}: nothing changed (version ${d.version})`;
  if (d.outcome === "planned") {
    return `Dry run: would dissolve group ${d.group} (owner ${d.owner}) at version ${d.version}: one dissolve event to its ${d.memberCount} member(s), who keep reading the history up to it; `
      + "then every send, membership change, transfer and CMD to the group is refused (nothing changed)";
  }
  return `Dissolved group ${d.group}: event at conversation_seq ${d.dissolvedAt} to ${d.memberCount} member(s), version ${d.version}`;
}

/**
 * The rows of `group list --all`, printed as pages arrive: fixed widths (ids are 36 characters),
 * since the widest cell of every page is not known before the last.
 */
const GROUP_COLUMNS = ["GROUP", "OWNER", "VERSION", "MEMBERS", "SEQ", "STATE"] as const;
const GROUP_STREAM_WIDTHS = [36, 36, 7, 7, 7] as const;

const streamLine = (cells: readonly string[]) => cells.map((c, i) => (i < GROUP_STREAM_WIDTHS.length ? c.padEnd(GROUP_STREAM_WIDTHS[i]!) : c)).join("  ").trimEnd();

export function groupStreamHeader(): string {
  return streamLine(GROUP_COLUMNS);
}

export function groupStreamRow(g: GroupResult): string {
  return streamLine([g.group, g.owner, String(g.version), String(g.memberCount), String(g.conversationSeq), g.state].map(visible));
}
