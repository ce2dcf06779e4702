import { commitBucket, partitionTag, userTag, uuidToHex, type KeySpace, type Uuid } from "../base/index.js";

/**
 * Where a user is online across the cluster (issue 27): hash on the user's `{uNNN}` slot tag,
 * field = node id, value = the node's incarnation (its start time, ms). An entry counts only
 * while its node is live in the cluster registry with that incarnation, so a dead node's entries
 * stop counting within the lease TTL and a restarted node's old ones never count again. The key
 * expires ONLINE_ENTRY_TTL_MS after its last write; nodes rewrite theirs every ONLINE_REFRESH_MS.
 */
export function onlineKey(space: KeySpace, tenant: Uuid, user: Uuid): string {
  return space.key(userTag(commitBucket(tenant, user)), "online", `${uuidToHex(tenant)}:${uuidToHex(user)}`);
}

/** The delivery consumer's position in one dispatch partition ("offset|streamId"), on the partition's tag. */
export function deliveryCheckpointKey(space: KeySpace, topic: string, partition: number): string {
  return space.key(partitionTag(partition), "delivery", `${topic}:${partition}:checkpoint`);
}
