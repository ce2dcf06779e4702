/**
 * What the node service and its router need of the engine cluster: the part of core/cluster's
 * ClusterMembership that says who owns a unit (ClusterMembership satisfies it structurally). Kept
 * this narrow so that the routing can be tested and reasoned about without the lease machinery.
 */
export type UnitKind = "relay" | "partition" | "slot";

export interface UnitOwnerView {
  kind: UnitKind;
  unit: number;
  /** null: no live owner right now. */
  nodeId: string | null;
  /** host:port of the owner's node.listen. */
  address: string | null;
  token: number;
  alive: boolean;
}

export interface OwnershipView {
  readonly nodeId: string;
  /** This node's own view: does it hold the unit's lease now? (A local read, no Redis.) */
  owns(kind: UnitKind, unit: number): boolean;
  tokenOf(kind: UnitKind, unit: number): number | null;
  /** The registry's answer (Redis): who owns the unit now. */
  ownerOf(kind: UnitKind, unit: number): Promise<UnitOwnerView>;
}
