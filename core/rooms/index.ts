/**
 * Chat rooms (spec 003 §1, issue 28, docs/rooms.md): one writer per room (the owner of its room
 * unit `{rNNN}`, core/cluster) with room_seq = (epoch << 48) | counter, the epoch from the unit
 * lease's fencing token; the ring buffer of ADR-0007 (count cap and room_log_retention_minutes, in
 * memory only); ROOM_JOIN / ROOM_REPLAY answered by a window that says by itself whether a gap can
 * be filled; room_msg_rate on the write side, room_outbound_frame_rate and
 * max_rooms_per_connection on each node's connections; promotion to a group (§1.6). Owns the
 * `{rNNN}:room:*` keys and the `qim_rooms_*` metrics. No mailbox, no list, no unread, no push.
 */
export { LocalRooms, mergeWindows, ROOM_FLUSH_SLICE, ROOM_FLUSH_TURN_MS, type RoomConnection, type RoomPush } from "./local.js";
export { roomEpochKey, roomPromotedKey, roomUnitOf } from "./keys.js";
export { roomMetrics } from "./metrics.js";
export { epochOfToken, ROOM_EPOCH_MAX, RoomRing, roomSeq, splitRoomSeq, type ReplayPage, type RoomRecord } from "./ring.js";
export {
  ROOM_INTEREST_BATCH, ROOM_LIST_LIMIT, roomErrorOf, Rooms, type NodeCall, type RoomAnswer, type RoomCall, type RoomsOptions, type RoomTransport, type WriterCall,
} from "./rooms.js";
export { ROOM_FORGOTTEN_COUNTERS_MAX, RoomPromotedError, RoomRateLimitedError, RoomWriters, type PublishRequest, type RoomInfo, type RoomWindow, type RoomWritersOptions } from "./writer.js";
