/** The JSON results of the `room` commands (docs/rooms.md "Operators"); cli/result.ts says how they are declared. */
import type { AdminRoom, AdminRoomMessage, ListRoomsResponse, PromoteRoomResponse, ReplayRoomResponse } from "../../admin-api/client.js";
import { nonEmpty, resultFrom } from "../result.js";

/** A room_seq in JSON: a decimal string, because (epoch << 48) | counter passes 2^53 (a JSON number would round it). */
const seq = (v: bigint) => v.toString();
/** A room_seq's counter within its epoch (what an operator compares): the low 48 bits. */
const counterOf = (v: bigint) => Number(v & ((1n << 48n) - 1n));

/** A room's fields, shared by `room list`'s rows and `room show`. */
const ROOM_FIELDS = {
  room: "wire",
  /** The node writing it (the owner of its room unit). */
  writer: "wire",
  /** Its writer's epoch (the room unit lease's token): it grows whenever the writer restarts or moves. */
  epoch: "wire",
  /** room_seq as a decimal string; the window's oldest (latest + 1 when it keeps none). */
  earliestReplayRoomSeq: (r: AdminRoom) => seq(r.earliestReplayRoomSeq),
  /** room_seq of its newest message, as a decimal string. */
  latestRoomSeq: (r: AdminRoom) => seq(r.latestRoomSeq),
  /** Messages its writer took this epoch (latest_room_seq's counter). */
  messagesThisEpoch: (r: AdminRoom) => counterOf(r.latestRoomSeq),
  /** Messages in the ring now (count cap and room_log_retention_minutes). */
  kept: "wire",
  /** Connections in the room across the cluster. */
  online: "wire",
  nodes: (r: AdminRoom) => r.nodes.map((n) => ({ nodeId: n.nodeId, connections: n.connections })),
  /** The group it became; null while a room. */
  promotedToGroup: "text or null",
  sinceMs: "u64",
} as const;

export const roomResult = resultFrom<AdminRoom>()(ROOM_FIELDS);
export type RoomResult = ReturnType<typeof roomResult>;

export const roomListResult = resultFrom<ListRoomsResponse & { tenant: string; limit: number }>()({
  tenant: "wire",
  rooms: (r) => r.rooms.map(roomResult),
  /** The next page's --after (the last room's id) when the page is full; null otherwise. */
  next: (r) => (r.rooms.length >= r.limit && r.rooms.length > 0 ? r.rooms[r.rooms.length - 1]!.room : null),
  answeredBy: (r) => nonEmpty(r.answeredBy),
});
export type RoomListResult = ReturnType<typeof roomListResult>;

export const roomShowResult = resultFrom<AdminRoom & { tenant: string }>()({ tenant: "wire", ...ROOM_FIELDS });
export type RoomShowResult = ReturnType<typeof roomShowResult>;

const messageResult = (m: AdminRoomMessage) => ({
  roomSeq: seq(m.roomSeq), messageId: m.messageId, sender: m.sender, senderDevice: m.senderDevice, createdAtMs: Number(m.createdAtMs), contentType: m.contentType,
  /** The payload as UTF-8 text when it is, else null (then payloadBase64 has it). */
  text: utf8(m.payload), payloadBase64: Buffer.from(m.payload).toString("base64"),
});

function utf8(b: Uint8Array): string | null {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(b);
  } catch {
    return null;
  }
}

export const roomReplayResult = resultFrom<ReplayRoomResponse & { tenant: string; room: string }>()({
  tenant: "wire",
  room: "wire",
  epoch: "wire",
  earliestReplayRoomSeq: (r) => seq(r.earliestReplayRoomSeq),
  latestRoomSeq: (r) => seq(r.latestRoomSeq),
  /** The cursor does not continue (another epoch, outside the window): no messages; start from latestRoomSeq. */
  replayTruncated: "wire",
  /** More follow: replay again with --after the last one's roomSeq. */
  more: "wire",
  messages: (r) => r.messages.map(messageResult),
  online: "wire",
});
export type RoomReplayResult = ReturnType<typeof roomReplayResult>;

export const roomPromoteResult = resultFrom<PromoteRoomResponse & { tenant: string; room: string }>()({
  tenant: "wire",
  room: "wire",
  /** The group (the room's id). */
  group: "wire",
  /** Its members, joined_at 0: the owner and the users online in the room. */
  members: "wire",
  memberVersion: "u64",
  /** The room's last room_seq (decimal string): its messages stay out of the group's history. */
  lastRoomSeq: (r) => seq(r.lastRoomSeq),
});
export type RoomPromoteResult = ReturnType<typeof roomPromoteResult>;
