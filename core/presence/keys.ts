import { commitBucket, userTag, uuidToHex, type KeySpace, type Uuid } from "../base/index.js";

/**
 * The nodes whose connections watch a user's presence: hash on the user's `{uNNN}` slot tag (beside
 * its online entry, core/delivery), field = node id, value = the node's incarnation. The node where
 * the user's first or last connection comes or goes reads it and tells those nodes (an entry of a
 * node not live with that incarnation is skipped). Expires PRESENCE_WATCH_TTL_MS after its last write.
 */
export function presenceWatchKey(space: KeySpace, tenant: Uuid, user: Uuid): string {
  return space.key(userTag(commitBucket(tenant, user)), "presence", `watch:${uuidToHex(tenant)}:${uuidToHex(user)}`);
}
