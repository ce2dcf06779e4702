/** Table-mode text of `qimctl version`. */
import { keyValues } from "../format.js";
import type { VersionResult } from "./results.js";

/** `notReached`: why the server part is missing (table mode; JSON says it with server null and the error). */
export function versionText(r: VersionResult, notReached?: string): string {
  const c = r.client;
  const lines: [string, string | null][] = [["client", `qimctl ${c.version} (node ${c.node}, ${c.platform})`]];
  if (r.server) {
    const s = r.server;
    lines.push(["server", `qimctl ${s.version} (node ${s.node}${s.nodeId ? `, node id ${s.nodeId}` : ""}, started ${s.startedAt}) at ${s.endpoint}`]);
  } else if (notReached !== undefined) {
    lines.push(["server", `not reached: ${notReached}`]);
  }
  return keyValues(lines);
}
