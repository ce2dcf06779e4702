/** Table-mode text of the `group` commands. */
import { keyValues, table, visible } from "../format.js";
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
    ["members", g.maxMembers === 0 ? g.memberCount : `${g.memberCount} (at most ${g.maxMembers}: groups.max_members)`],
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

/**
 * The rows of `group list --all`, printed as pages arrive: fixed widths (ids are 36 characters),
 * since the widest cell of every page is not known before the last.
 */
const GROUP_COLUMNS = ["GROUP", "OWNER", "VERSION", "MEMBERS", "SEQ"] as const;
const GROUP_STREAM_WIDTHS = [36, 36, 7, 7] as const;

const streamLine = (cells: readonly string[]) => cells.map((c, i) => (i < GROUP_STREAM_WIDTHS.length ? c.padEnd(GROUP_STREAM_WIDTHS[i]!) : c)).join("  ").trimEnd();

export function groupStreamHeader(): string {
  return streamLine(GROUP_COLUMNS);
}

export function groupStreamRow(g: GroupResult): string {
  return streamLine([g.group, g.owner, String(g.version), String(g.memberCount), String(g.conversationSeq)].map(visible));
}
