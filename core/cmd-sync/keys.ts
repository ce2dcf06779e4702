/**
 * The durable CMD conversation state's keys, per user slot on the slot's `{uNNN}` tag (the user's
 * session bucket, core/cluster slotOfUser), beside the slot's lease so that every write's Lua
 * checks the fence in the same atomic step:
 *   cmdstate   hash  `tenantHex:userHex|type|channelId` → `read|deletedTo|activeAt|updatedAt|lastMsgSeq`
 *   cmdactive  zset  score 0, member `tenantHex:userHex|<2^53-1-activeAt as 14 hex>|<type as 3
 *                    digits>|channelId`: one ZRANGEBYLEX over a user's prefix lists the user's
 *                    channels in (activeAt DESC, type, id) order
 *   cmdunread  zset  the same members, of the rows whose last seq is beyond max(read, deleted-to)
 *                    only: what a sync reads (issue 23: never the newest N rows, read or not)
 *   cmdindexed hash  `tenantHex:userHex` → "1": the users whose rows written before the last seq
 *                    was kept (four fields, last seq unknown) have been put in cmdunread
 *                    (indexLegacyCmdStates, at the user's first sync after the upgrade)
 * Channel ids hold no '|' and no space (channel.ts), so the fields split unambiguously.
 */
import { userTag, uuidToHex, type KeySpace, type Uuid } from "../base/index.js";
import { unitLeaseKey } from "../cluster/index.js";
import type { CommandChannelKey } from "../cmd-log/index.js";

export interface CmdStateKeys {
  state: string;
  index: string;
  unread: string;
  indexed: string;
  lease: string;
}

export function cmdStateKeys(space: KeySpace, slot: number): CmdStateKeys {
  const tag = userTag(slot);
  return { state: space.key(tag, "cmdstate"), index: space.key(tag, "cmdactive"), unread: space.key(tag, "cmdunread"), indexed: space.key(tag, "cmdindexed"), lease: unitLeaseKey(space, "slot", slot) };
}

/** `tenantHex:userHex`: the user part of a field and of an index member. */
export function cmdUserRef(tenant: Uuid, user: Uuid): string {
  return `${uuidToHex(tenant)}:${uuidToHex(user)}`;
}

/** The state hash's field of a (user, channel). */
export function cmdStateField(tenant: Uuid, user: Uuid, channel: CommandChannelKey): string {
  return `${cmdUserRef(tenant, user)}|${channel.channelType}|${channel.channelId}`;
}

/** 2^53-1: the index stores (CMD_ACTIVE_MAX - activeAt) so that ascending bytes are descending times. */
export const CMD_ACTIVE_MAX = Number.MAX_SAFE_INTEGER;

/** The index member of a (user, channel) at an active time (lua/cmd-sync builds the same string). */
export function cmdActiveMember(tenant: Uuid, user: Uuid, channel: CommandChannelKey, activeAt: number): string {
  const inv = (CMD_ACTIVE_MAX - activeAt).toString(16).padStart(14, "0");
  return `${cmdUserRef(tenant, user)}|${inv}|${String(channel.channelType).padStart(3, "0")}|${channel.channelId}`;
}

/** A user slot's flush point (catchup.ts): every CMD commit before it that concerns the slot's users is durably flushed. */
export function cmdFlushPointKey(space: KeySpace, slot: number): string {
  return space.key(userTag(slot), "cmdflushpt");
}
