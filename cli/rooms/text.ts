/** Table-mode text of the `room` commands. */
import { table, visible } from "../format.js";
import type { RoomListResult, RoomPromoteResult, RoomReplayResult, RoomShowResult } from "./results.js";

const at = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
/** A room_seq as an operator reads it: epoch:counter (the decimal form is in --output json). */
const seqText = (s: string) => `${Number(BigInt(s) >> 48n)}:${Number(BigInt(s) & ((1n << 48n) - 1n))}`;

export function listText(out: RoomListResult): string {
  if (out.rooms.length === 0) return "No open rooms (a room is open while it has connections or messages to replay).";
  const rows = out.rooms.map((r) => [r.room, r.writer, String(r.epoch), String(r.online), String(r.messagesThisEpoch), String(r.kept), r.promotedToGroup ? `→ group ${r.promotedToGroup}` : "room"]);
  const more = out.next ? `\n\nmore: --after ${out.next}` : "";
  return `${table(["ROOM", "WRITER", "EPOCH", "ONLINE", "MESSAGES", "KEPT", "STATE"], rows)}${more}`;
}

export function showText(r: RoomShowResult): string {
  return [
    `Room ${r.room}${r.promotedToGroup ? ` (promoted to group ${r.promotedToGroup}: it takes no more room messages)` : ""}`,
    `  writer:   ${r.writer} (epoch ${r.epoch}, since ${at(r.sinceMs)})`,
    `  online:   ${r.online} connection(s)${r.nodes.length > 0 ? `: ${r.nodes.map((n) => `${n.nodeId} ${n.connections}`).join(", ")}` : ""}`,
    `  messages: ${r.messagesThisEpoch} this epoch; the ring keeps ${r.kept}, replayable from ${seqText(r.earliestReplayRoomSeq)} to ${seqText(r.latestRoomSeq)} (epoch:counter)`,
  ].join("\n");
}

export function replayText(r: RoomReplayResult): string {
  if (r.replayTruncated) return `The cursor does not continue in room ${r.room} (another epoch, or outside the window): nothing to replay; latest is ${seqText(r.latestRoomSeq)} (${r.latestRoomSeq})`;
  if (r.messages.length === 0) return `Nothing after the cursor in room ${r.room} (latest ${seqText(r.latestRoomSeq)})`;
  const rows = r.messages.map((m) => [seqText(m.roomSeq), at(m.createdAtMs), m.sender, m.contentType, m.text === null ? `(${Buffer.from(m.payloadBase64, "base64").byteLength} bytes, binary)` : visible(m.text).slice(0, 80)]);
  return `${table(["SEQ", "AT", "SENDER", "TYPE", "TEXT"], rows)}${r.more ? `\n\nmore: --after ${r.messages[r.messages.length - 1]!.roomSeq}` : ""}`;
}

export function promoteText(r: RoomPromoteResult): string {
  return `Room ${r.room} is group ${r.group} now, with ${r.members.length} member(s) (joined_at 0; member version ${r.memberVersion}). Its room messages (up to ${seqText(r.lastRoomSeq)}) stay out of the group's history; its connections were told.`;
}
