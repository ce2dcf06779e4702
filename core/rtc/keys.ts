import { commitBucket, userTag, uuidToHex, type KeySpace, type Uuid } from "../base/index.js";

/**
 * RTC signalling's keys (issue 28, spec 003 §5), on the user's `{uNNN}` slot tag:
 *   rtccall  string  the call the user is in: "callId|peerHex|groupHex|O|R|A", expiring on its own
 *   rtcvoip  string  VoIP pushes to one device on one UTC day (INCR), expiring two days later
 */
export function rtcCallKey(space: KeySpace, tenant: Uuid, user: Uuid): string {
  return space.key(userTag(commitBucket(tenant, user)), "rtccall", `${uuidToHex(tenant)}:${uuidToHex(user)}`);
}

export function rtcVoipKey(space: KeySpace, tenant: Uuid, user: Uuid, device: string, day: string): string {
  return space.key(userTag(commitBucket(tenant, user)), "rtcvoip", `${uuidToHex(tenant)}:${uuidToHex(user)}:${day}:${device}`);
}
