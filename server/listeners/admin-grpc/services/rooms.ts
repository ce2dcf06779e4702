import { InvalidArgumentError, pageLimit, parseUuid, promoteRoom, ROOM_LIST_LIMIT, ROOM_REPLAY_PAGE_LIMIT, type RoomInfo } from "../../../../core/index.js";
import { catalogEntry } from "../../../../admin-api/catalog.js";
import type { Room } from "../../../../admin-api/gen/qim/admin/v1/rooms.js";
import { ALL_ROLES, defineService, MUTATE, unary } from "../../../pipeline/rpc.js";

/**
 * RoomService (issue 28, spec 003 §1): operators' view of the rooms through core/rooms (their
 * writers, wherever they are), and a room's promotion to a group (core/operations promoteRoom,
 * audited).
 */
function roomOut(i: RoomInfo): Room {
  return {
    room: i.room, writer: i.writer, epoch: i.epoch, earliestReplayRoomSeq: i.earliest, latestRoomSeq: i.latest, kept: i.kept, online: i.online,
    nodes: i.nodes.map((n) => ({ nodeId: n.nodeId, connections: n.connections })), promotedToGroup: i.promotedTo, sinceMs: BigInt(i.since),
  };
}

export const roomService = defineService(catalogEntry("qim.admin.v1.RoomService"), {
  listRooms: unary({
    roles: ALL_ROLES, mutates: false,
    async handle(req, { deps }) {
      const tenant = parseUuid(req.tenant, "tenant");
      const after = req.after === "" ? "" : parseUuid(req.after, "after");
      const limit = Number(pageLimit(req.limit, { default: 100, max: ROOM_LIST_LIMIT }));
      const rooms = await deps.runtime.rooms.list(tenant, after, limit);
      return { response: { rooms: rooms.map(roomOut), answeredBy: deps.runtime.cluster?.nodeId ?? "" } };
    },
  }),
  getRoom: unary({
    roles: ALL_ROLES, mutates: false,
    async handle(req, { deps }) {
      return { response: { room: roomOut(await deps.runtime.rooms.describe(parseUuid(req.tenant, "tenant"), parseUuid(req.room, "room"))) } };
    },
  }),
  replayRoom: unary({
    roles: ALL_ROLES, mutates: false,
    async handle(req, { deps }) {
      const tenant = parseUuid(req.tenant, "tenant");
      const room = parseUuid(req.room, "room");
      if (req.limit > ROOM_REPLAY_PAGE_LIMIT) throw new InvalidArgumentError("limit", `at most ${ROOM_REPLAY_PAGE_LIMIT} messages a replay`);
      const w = await deps.runtime.rooms.replay(tenant, room, req.afterRoomSeq, req.limit === 0 ? ROOM_REPLAY_PAGE_LIMIT : req.limit);
      return {
        response: {
          epoch: w.epoch, earliestReplayRoomSeq: w.earliest, latestRoomSeq: w.latest, replayTruncated: w.truncated, more: w.more, online: w.online,
          messages: w.events.map((e) => ({
            roomSeq: e.roomSeq, messageId: e.messageId, sender: e.sender, senderDevice: e.senderDevice, createdAtMs: BigInt(e.createdAt), contentType: e.contentType,
            payload: Buffer.from(e.payload.buffer, e.payload.byteOffset, e.payload.byteLength),
          })),
        },
      };
    },
  }),
  promoteRoom: unary({
    roles: MUTATE, mutates: true,
    async handle(req, { deps }) {
      const tenant = parseUuid(req.tenant, "tenant");
      const room = parseUuid(req.room, "room");
      const owner = parseUuid(req.owner, "owner");
      const p = await promoteRoom(deps.runtime, tenant, room, owner);
      return {
        response: { group: p.group, members: p.members, memberVersion: BigInt(p.memberVersion), lastRoomSeq: p.lastRoomSeq },
        detail: `room ${room} became group ${p.group} with ${p.members.length} member(s) (joined_at 0); room messages up to ${p.lastRoomSeq} stay out of its history`,
      };
    },
  }),
});
