/** The JSON results of the `cluster` commands (docs/operator-guide.md "Cluster"). */
import type { ClusterNode, DrainResponse, GetOwnerResponse, ListNodesResponse, UndrainResponse } from "../../admin-api/client.js";
import { nonEmpty, u64 } from "../format.js";

export interface OwnedResult {
  relayBuckets: number;
  partitions: number;
  slots: number;
}

export interface NodeResult {
  nodeId: string;
  /** host:port of its node service, as peers reach it. */
  address: string;
  version: string;
  startedAtMs: number;
  /** Time since its last heartbeat when the server answered. */
  heartbeatAgeMs: number;
  alive: boolean;
  draining: boolean;
  /** The kinds of units it takes (cluster.units): relay, partition, slot. */
  units: ("relay" | "partition" | "slot")[];
  owned: OwnedResult;
  /** Its CMD pending file that did not decode at start-up, renamed .bad; null when none. */
  cmdBadFile: string | null;
}

export interface NodesResult {
  nodes: NodeResult[];
  /** The node whose admin API answered. */
  answeredBy: string;
}

const ownedResult = (o: ClusterNode["owned"]): OwnedResult => ({ relayBuckets: o?.relayBuckets ?? 0, partitions: o?.partitions ?? 0, slots: o?.slots ?? 0 });

/** core/cluster's UNIT_KINDS (the CLI does not load the engine; test/admin-api/settings.test.ts holds them equal). */
export const UNIT_KINDS = ["relay", "partition", "slot"] as const;
/** A server from before node roles sends no units: it takes every kind. */
const unitsResult = (u: readonly string[]): NodeResult["units"] => (u.length === 0 ? [...UNIT_KINDS] : UNIT_KINDS.filter((k) => u.includes(k)));

export function nodesResult(r: ListNodesResponse): NodesResult {
  return {
    nodes: r.nodes.map((n) => ({
      nodeId: n.nodeId, address: n.address, version: n.version, startedAtMs: u64(n.startedAtMs), heartbeatAgeMs: u64(n.heartbeatAgeMs),
      alive: n.alive, draining: n.draining, units: unitsResult(n.units), owned: ownedResult(n.owned), cmdBadFile: nonEmpty(n.cmdBadFile),
    })),
    answeredBy: r.answeredBy,
  };
}

export interface OwnerResult {
  /** relay (a bucket), partition, or slot (a user's session bucket). */
  kind: string;
  unit: number;
  /** What was asked: the user (tenant and user) whose slot this is, else null. */
  user: { tenant: string; user: string } | null;
  /** null when the unit has no live owner right now. */
  nodeId: string | null;
  address: string | null;
  /** The fencing token of the owner's lease. */
  token: number;
  alive: boolean;
}

export function ownerResult(r: GetOwnerResponse, user: { tenant: string; user: string } | null): OwnerResult {
  return { kind: r.kind, unit: r.unit, user, nodeId: nonEmpty(r.nodeId), address: nonEmpty(r.address), token: u64(r.token), alive: r.alive };
}

export interface DrainResult {
  nodeId: string;
  /** False when the node was draining already: nothing changed. */
  changed: boolean;
  /** What the node owned before the drain (handed to the others). */
  handedOver: OwnedResult;
}

export function drainResult(r: DrainResponse): DrainResult {
  return { nodeId: r.nodeId, changed: r.changed, handedOver: ownedResult(r.handedOver) };
}

export interface UndrainResult {
  nodeId: string;
  /** False when the node was not draining: nothing changed. */
  changed: boolean;
}

export function undrainResult(r: UndrainResponse): UndrainResult {
  return { nodeId: r.nodeId, changed: r.changed };
}
