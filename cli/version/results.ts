/** The JSON result of `qimctl version`; cli/result.ts says how the server's part is declared. */
import type { ServerInfo } from "../../admin-api/client.js";
import { resultFrom } from "../result.js";

export interface ClientVersionResult {
  /** qimctl's package version. */
  version: string;
  /** The Node.js version running it, e.g. "v20.19.2". */
  node: string;
  /** e.g. "linux-x64". */
  platform: string;
}

export const serverVersion = resultFrom<ServerInfo & { endpoint: string }>()({
  endpoint: "wire",
  version: "wire",
  node: (s) => s.nodeVersion,
  /** The server's node id in the engine cluster, or null when it is no node of one. */
  nodeId: "text or null",
  /** When the server process started, RFC 3339 (milliseconds since 1970 fit a double exactly). */
  startedAt: (s) => new Date(Number(s.startedAtMs)).toISOString(),
});
export type ServerVersionResult = ReturnType<typeof serverVersion>;

export interface VersionResult {
  client: ClientVersionResult;
  /** null with --client, or when the server was not reached (the command then fails, stderr says why). */
  server: ServerVersionResult | null;
}

export function clientVersion(version: string): ClientVersionResult {
  return { version, node: process.version, platform: `${process.platform}-${process.arch}` };
}
