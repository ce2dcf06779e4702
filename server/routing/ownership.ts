/**
 * What the node service and its router need of the engine cluster: the part of core/cluster's
 * ClusterMembership that says who owns a unit (ClusterMembership satisfies it structurally). Kept
 * this narrow so that the routing can be exercised with any registry view (a test's caller that is
 * not a node asks the admin API) and so that the router does not reach into the lease machinery.
 */
import type { UnitKind, UnitOwner } from "../../core/index.js";

export type { UnitKind };
export type UnitOwnerView = UnitOwner;

export interface OwnershipView {
  readonly nodeId: string;
  /** This node's own view: does it hold the unit's lease now? (A local read, no Redis.) */
  owns(kind: UnitKind, unit: number): boolean;
  tokenOf(kind: UnitKind, unit: number): number | null;
  /** The registry's answer (Redis): who owns the unit now. */
  ownerOf(kind: UnitKind, unit: number): Promise<UnitOwnerView>;
}
