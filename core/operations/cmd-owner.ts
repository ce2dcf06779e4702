import type { Uuid } from "../base/index.js";
import { slotOfUser, type ClusterMembership } from "../cluster/index.js";

/** Where a user's CMD state is kept: its slot and, in a cluster, the node that owns the slot now. */
export interface CmdOwner {
  slot: number;
  /** false: a single node (no cluster), which owns every slot; the other fields are empty. */
  clustered: boolean;
  nodeId: string;
  address: string;
  token: number;
  alive: boolean;
}

/**
 * The CMD owner of a user (spec 001: the owner of the user's slot): the user's slot (the session
 * bucket, cluster's rule) and the slot's lease holder. A join of the CMD rule and the cluster's
 * leases, so it lives here and not in the admin API's handler.
 */
export async function cmdOwnerOf(cluster: ClusterMembership | null | undefined, tenant: Uuid, user: Uuid): Promise<CmdOwner> {
  const slot = slotOfUser(tenant, user);
  if (!cluster) return { slot, clustered: false, nodeId: "", address: "", token: 0, alive: true };
  const o = await cluster.ownerOf("slot", slot);
  return { slot, clustered: true, nodeId: o.nodeId ?? "", address: o.address ?? "", token: o.token, alive: o.alive };
}
