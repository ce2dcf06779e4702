/** The JSON result of `qimctl version`. */
import type { ServerInfo } from "../../admin-api/client.js";
import { nonEmpty } from "../format.js";

export interface ClientVersionResult {
  /** qimctl's package version. */
  version: string;
  /** The Node.js version running it, e.g. "v20.19.2". */
  node: string;
  /** e.g. "linux-x64". */
  platform: string;
}

export interface ServerVersionResult {
  endpoint: string;
  version: string;
  node: string;
  /** The server's node id in the engine cluster, or null when it is no node of one. */
  nodeId: string | null;
  /** When the server process started, RFC 3339. */
  startedAt: string;
}

export interface VersionResult {
  client: ClientVersionResult;
  /** null with --client, or when the server was not reached (the command then fails, stderr says why). */
  server: ServerVersionResult | null;
}

export function clientVersion(version: string): ClientVersionResult {
  return { version, node: process.version, platform: `${process.platform}-${process.arch}` };
}

export function serverVersion(endpoint: string, s: ServerInfo): ServerVersionResult {
  // milliseconds since 1970 fit a double exactly
  return { endpoint, version: s.version, node: s.nodeVersion, nodeId: nonEmpty(s.nodeId), startedAt: new Date(Number(s.startedAtMs)).toISOString() };
}
