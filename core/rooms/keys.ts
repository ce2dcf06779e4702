import { commitBucket, GLOBAL_TAG, roomTag, uuidToHex, type KeySpace, type Uuid } from "../base/index.js";
import { ROOM_UNIT_COUNT } from "../cluster/index.js";

/** A room's unit (its writer is the unit's owner): the room's hash over the tenant and the room id, like a conversation's bucket. */
export function roomUnitOf(tenant: Uuid, room: Uuid): number {
  return commitBucket(tenant, room) % ROOM_UNIT_COUNT;
}

/** The group a room was promoted to (spec 003 §1.6): string, on the room unit's `{rNNN}` tag; its writer reads it once when it takes the room up. */
export function roomPromotedKey(space: KeySpace, tenant: Uuid, room: Uuid): string {
  return space.key(roomTag(roomUnitOf(tenant, room)), "room", `promoted:${uuidToHex(tenant)}:${uuidToHex(room)}`);
}

/** A runtime without a cluster: the rooms' epoch counter (INCR once per process at start: a restarted writer's epoch grows). On `{g000}`. */
export function roomEpochKey(space: KeySpace): string {
  return space.key(GLOBAL_TAG, "room", "epoch");
}
