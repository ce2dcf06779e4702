/** The JSON results of the `cluster` commands (docs/operator-guide.md "Cluster"); cli/result.ts says how they are declared. */
import type { ClusterNode, DrainResponse, GetOwnerResponse, ListNodesResponse, UndrainResponse } from "../../admin-api/client.js";
import { resultFrom } from "../result.js";

export interface OwnedResult {
  relayBuckets: number;
  partitions: number;
  slots: number;
  /** Room units (core/rooms): the writers of the rooms hashed to them. */
  rooms: number;
}

const ownedResult = (o: ClusterNode["owned"]): OwnedResult => ({ relayBuckets: o?.relayBuckets ?? 0, partitions: o?.partitions ?? 0, slots: o?.slots ?? 0, rooms: o?.rooms ?? 0 });

/** core/cluster's UNIT_KINDS (the CLI does not load the engine; test/admin-api/settings.test.ts holds them equal). */
export const UNIT_KINDS = ["relay", "partition", "slot", "room"] as const;

export const nodeResult = resultFrom<ClusterNode>()({
  nodeId: "wire",
  /** host:port of its node service, as peers reach it. */
  address: "wire",
  version: "wire",
  startedAtMs: "u64",
  /** Time since its last heartbeat when the server answered. */
  heartbeatAgeMs: "u64",
  alive: "wire",
  draining: "wire",
  /** The kinds of units it takes (cluster.units): relay, partition, slot, room. A server from before node roles sends none: it takes every kind. */
  units: (n): (typeof UNIT_KINDS)[number][] => (n.units.length === 0 ? [...UNIT_KINDS] : UNIT_KINDS.filter((k) => n.units.includes(k))),
  owned: (n) => ownedResult(n.owned),
  /** Its CMD pending file that did not decode at start-up, renamed .bad; null when none. */
  cmdBadFile: "text or null",
  /** Device connections on its client gateway as it last published them (every 5 s); null when it publishes none (no gateway). */
  connections: (n): number | null => (n.connections === undefined ? null : Number(n.connections)),
});
export type NodeResult = ReturnType<typeof nodeResult>;

export const nodesResult = resultFrom<ListNodesResponse>()({
  nodes: (r) => r.nodes.map(nodeResult),
  /** The node whose admin API answered. */
  answeredBy: "wire",
});
export type NodesResult = ReturnType<typeof nodesResult>;

export const ownerResult = resultFrom<GetOwnerResponse & { user: { tenant: string; user: string } | null }>()({
  /** relay (a bucket), partition, or slot (a user's session bucket). */
  kind: "wire",
  unit: "wire",
  /** What was asked: the user (tenant and user) whose slot this is, else null. */
  user: (r) => r.user,
  /** null when the unit has no live owner right now. */
  nodeId: "text or null",
  address: "text or null",
  /** The fencing token of the owner's lease. */
  token: "u64",
  alive: "wire",
});
export type OwnerResult = ReturnType<typeof ownerResult>;

export const drainResult = resultFrom<DrainResponse>()({
  nodeId: "wire",
  /** False when the node was draining already: nothing changed. */
  changed: "wire",
  /** What the node owned before the drain (handed to the others). */
  handedOver: (r) => ownedResult(r.handedOver),
});
export type DrainResult = ReturnType<typeof drainResult>;

export const undrainResult = resultFrom<UndrainResponse>()({
  nodeId: "wire",
  /** False when the node was not draining: nothing changed. */
  changed: "wire",
});
export type UndrainResult = ReturnType<typeof undrainResult>;
