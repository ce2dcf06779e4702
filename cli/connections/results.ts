/** The JSON results of the `connections` commands (docs/gateway.md "Operators: connections"); cli/result.ts says how they are declared. */
import type { AdminDeviceConnection, KickConnectionsResponse, ListConnectionsResponse } from "../../admin-api/client.js";
import { nonEmpty, resultFrom } from "../result.js";

export const connectionResult = resultFrom<AdminDeviceConnection>()({
  /** The node that holds it (null on a server that is no cluster node). */
  nodeId: (c) => nonEmpty(c.nodeId),
  user: "wire",
  device: "wire",
  /** When it connected (ms since 1970). */
  sinceMs: "u64",
  remoteAddress: "wire",
  framesIn: "u64",
  framesOut: "u64",
  /** Bytes queued on its socket, not yet written: a slow device. */
  bufferedBytes: "u64",
});
export type ConnectionResult = ReturnType<typeof connectionResult>;

export const connectionsListResult = resultFrom<ListConnectionsResponse & { tenant: string }>()({
  tenant: "wire",
  connections: (r) => r.connections.map(connectionResult),
  /** More matched than --limit: these are the first by node and connection time. */
  truncated: "wire",
  /** Nodes that were asked and did not answer: their connections are missing. */
  unreachableNodes: "wire",
  answeredBy: (r) => nonEmpty(r.answeredBy),
});
export type ConnectionsListResult = ReturnType<typeof connectionsListResult>;

export const connectionsKickResult = resultFrom<KickConnectionsResponse & { tenant: string; user: string; device: string | null }>()({
  tenant: "wire",
  user: "wire",
  /** The device kicked (null: every device of the user). */
  device: (r) => r.device,
  /** Connections closed (0: none was open; nothing changed). */
  closed: "wire",
  nodes: "wire",
  unreachableNodes: "wire",
});
export type ConnectionsKickResult = ReturnType<typeof connectionsKickResult>;
