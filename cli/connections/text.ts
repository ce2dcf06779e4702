/** Table-mode text of the `connections` commands. */
import { table } from "../format.js";
import type { ConnectionsKickResult, ConnectionsListResult } from "./results.js";

const since = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");

export function listText(out: ConnectionsListResult): string {
  const warn = out.unreachableNodes.length > 0 ? `\nnot answered: ${out.unreachableNodes.join(", ")} (their connections are missing)` : "";
  if (out.connections.length === 0) return `No device connections${warn}`;
  const rows = out.connections.map((c) => [c.device, c.user, c.nodeId ?? "-", since(c.sinceMs), c.remoteAddress, String(c.framesIn), String(c.framesOut), String(c.bufferedBytes)]);
  const more = out.truncated ? "\n\nmore matched: narrow with --user or --node, or raise --limit" : "";
  return `${table(["DEVICE", "USER", "NODE", "SINCE", "ADDRESS", "FRAMES IN", "FRAMES OUT", "BUFFERED"], rows)}${more}${warn}`;
}

export function kickText(out: ConnectionsKickResult): string {
  const who = `user ${out.user}${out.device ? ` device ${out.device}` : ""}`;
  const warn = out.unreachableNodes.length > 0 ? `; not answered: ${out.unreachableNodes.join(", ")}` : "";
  return out.closed === 0 ? `No open connection of ${who}: nothing closed${warn}` : `Closed ${out.closed} connection(s) of ${who} on ${out.nodes.join(", ") || "this server"}${warn}`;
}
