import { FailedPreconditionError, InvalidArgumentError, MAX_INITIAL_MEMBERS, type Uuid } from "../base/index.js";
import type { ConversationService } from "../conversation/index.js";
import type { Rooms } from "../rooms/index.js";

export interface RoomPromotion {
  group: Uuid;
  owner: Uuid;
  /** The members it was created with (joined_at = 0): the owner and the users online in the room. */
  members: Uuid[];
  memberVersion: number;
  /** The room's last room_seq: its messages stay out of the group's history (spec 003 §1.6). */
  lastRoomSeq: bigint;
}

/**
 * A room becomes a persistent group (spec 003 §1.6): the group is created with the room's id,
 * its members the owner and every user online in the room now, all with joined_at = 0 (the group's
 * conversation_seq starts at 1 from here; no room message enters its history); then the room takes
 * no more messages and its connections get a last window naming the group. A join of the rooms and
 * the conversations, so it lives here. A retry after the group was made finishes the room's part (a
 * group with the room's id and the same owner is taken for the first attempt's; one with another
 * owner is refused, nothing changed).
 */
export async function promoteRoom(deps: { rooms: Rooms; conversations: ConversationService }, tenant: Uuid, room: Uuid, owner: Uuid): Promise<RoomPromotion> {
  const info = await deps.rooms.describe(tenant, room);
  if (info.promotedTo !== "") throw new FailedPreconditionError(`room ${room} was promoted to group ${info.promotedTo} already`, { group: info.promotedTo });
  // one more than a group is created with: enough to refuse a room too big, never a whole crowd in one answer
  const online = await deps.rooms.onlineUsers(info, MAX_INITIAL_MEMBERS + 1);
  const members = [...new Set([owner, ...online])];
  if (members.length > MAX_INITIAL_MEMBERS) throw new InvalidArgumentError("room", `the room has more users online than a group is created with (${MAX_INITIAL_MEMBERS}): it stays a room`);
  let version: number;
  try {
    const g = await deps.conversations.createGroup({ tenant, group: room, owner, members });
    version = g.version;
  } catch (err) {
    // a retry: the group exists from the first attempt (the room's id is the group's): finish the room's part —
    // unless it is another group that has the room's id (another owner made it): then nothing changes
    if (!(err instanceof Error && "code" in err && err.code === "ALREADY_EXISTS")) throw err;
    const existing = await deps.conversations.getGroup(tenant, room);
    if (existing.owner !== owner) {
      throw new FailedPreconditionError(`a group with the room's id ${room} exists already, owned by ${existing.owner}: a promotion by ${owner} did not make it; nothing changed`, { group: room });
    }
    version = existing.version;
  }
  await deps.rooms.markPromoted(tenant, room, room);
  return { group: room, owner, members, memberVersion: version, lastRoomSeq: info.latest };
}
