/**
 * The rooms' node calls (core/rooms RoomCall, RoomAnswer) on the wire of NodeService.Rooms, both
 * ways: the router sends them (roomTransport), the node's handler takes them (local.ts). A peer's
 * bytes are input: every id is parsed, every number bounded.
 */
import { parseUuid, ROOM_INTEREST_BATCH, ROOM_LIST_LIMIT, ROOM_REPLAY_PAGE_LIMIT, ROOM_UNIT_COUNT, type RoomAnswer, type RoomCall, type RoomInfo, type RoomRecord, type RoomWindow, type Uuid } from "../../core/index.js";
import type { RoomEventWire, RoomInfoWire, RoomsRequest, RoomsResponse, RoomWindowWire } from "../../admin-api/gen/qim/node/v1/node.js";

type Call = NonNullable<RoomsRequest["call"]>;
type Answer = NonNullable<RoomsResponse["answer"]>;

const bytes = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength);

function unitIn(u: number): number {
  if (!Number.isInteger(u) || u < 0 || u >= ROOM_UNIT_COUNT) throw new Error(`unit: 0 to ${ROOM_UNIT_COUNT - 1}, not ${u}`);
  return u;
}

export function recordOut(r: RoomRecord): RoomEventWire {
  return { roomSeq: r.roomSeq, messageId: r.messageId, sender: r.sender, senderDevice: r.senderDevice, createdAtMs: BigInt(r.createdAt), contentType: r.contentType, payload: bytes(r.payload) };
}

function recordIn(e: RoomEventWire): RoomRecord {
  return { roomSeq: e.roomSeq, messageId: e.messageId, sender: parseUuid(e.sender, "sender"), senderDevice: e.senderDevice, createdAt: Number(e.createdAtMs), contentType: e.contentType, payload: e.payload };
}

function windowOut(w: RoomWindow): RoomWindowWire {
  return {
    tenant: w.tenant, room: w.room, epoch: w.epoch, earliest: w.earliest, latest: w.latest, truncated: w.truncated, more: w.more,
    events: w.events.map(recordOut), online: w.online, promotedTo: w.promotedTo,
  };
}

function windowIn(w: RoomWindowWire): RoomWindow {
  return {
    tenant: parseUuid(w.tenant, "tenant"), room: parseUuid(w.room, "room"), epoch: w.epoch, earliest: w.earliest, latest: w.latest, truncated: w.truncated, more: w.more,
    events: w.events.map(recordIn), online: w.online, promotedTo: w.promotedTo === "" ? "" : parseUuid(w.promotedTo, "promoted_to"),
  };
}

function infoOut(i: RoomInfo): RoomInfoWire {
  return {
    tenant: i.tenant, room: i.room, writer: i.writer, epoch: i.epoch, earliest: i.earliest, latest: i.latest, kept: i.kept, online: i.online,
    nodes: i.nodes.map((n) => ({ nodeId: n.nodeId, connections: n.connections })), promotedTo: i.promotedTo, sinceMs: BigInt(i.since),
  };
}

function infoIn(i: RoomInfoWire): RoomInfo {
  return {
    tenant: parseUuid(i.tenant, "tenant"), room: parseUuid(i.room, "room"), writer: i.writer, epoch: i.epoch, earliest: i.earliest, latest: i.latest, kept: i.kept, online: i.online,
    nodes: i.nodes.map((n) => ({ nodeId: n.nodeId, connections: n.connections })), promotedTo: i.promotedTo, since: Number(i.sinceMs),
  };
}

export function callOut(c: RoomCall): Call {
  switch (c.kind) {
    case "publish": {
      const r = c.req;
      return { $case: "publish", publish: { unit: c.unit, tenant: r.tenant, room: r.room, sender: r.sender, senderDevice: r.senderDevice, messageId: r.messageId, contentType: r.contentType, payload: bytes(r.payload), count: c.count } };
    }
    case "join": return { $case: "join", join: { unit: c.unit, tenant: c.tenant, room: c.room, count: c.count, after: c.after, group: "" } };
    case "replay": return { $case: "replay", replay: { unit: c.unit, tenant: c.tenant, room: c.room, count: c.limit, after: c.after, group: "" } };
    case "describe": return { $case: "describe", describe: { unit: c.unit, tenant: c.tenant, room: c.room, count: 0, after: 0n, group: "" } };
    case "promote": return { $case: "promote", promote: { unit: c.unit, tenant: c.tenant, room: c.room, count: 0, after: 0n, group: c.group } };
    case "users": return { $case: "users", users: { unit: 0, tenant: c.tenant, room: c.room, count: c.limit, after: 0n, group: "" } };
    case "interest": return { $case: "interest", interest: { entries: c.entries.map((e) => ({ tenant: e.tenant, room: e.room, unit: e.unit, count: e.count })) } };
    case "broadcast": return { $case: "broadcast", broadcast: { windows: c.windows.map(windowOut) } };
    case "list": return { $case: "list", list: { tenant: c.tenant, after: c.after, limit: c.limit } };
  }
}

/** A peer's call, parsed (throws on what is malformed: the handler answers REJECTED). */
export function callIn(c: Call | undefined): RoomCall {
  if (!c) throw new Error("call: none");
  const at = (a: { unit: number; tenant: string; room: string }) => ({ unit: unitIn(a.unit), tenant: parseUuid(a.tenant, "tenant"), room: parseUuid(a.room, "room") });
  switch (c.$case) {
    case "publish": {
      const p = c.publish;
      const { unit, tenant, room } = at(p);
      return { kind: "publish", unit, count: p.count, req: { tenant, room, sender: parseUuid(p.sender, "sender"), senderDevice: p.senderDevice, messageId: p.messageId, contentType: p.contentType, payload: p.payload } };
    }
    case "join": return { kind: "join", ...at(c.join), count: c.join.count, after: c.join.after };
    case "replay": {
      if (c.replay.count < 1 || c.replay.count > ROOM_REPLAY_PAGE_LIMIT) throw new Error(`limit: 1 to ${ROOM_REPLAY_PAGE_LIMIT}`);
      return { kind: "replay", ...at(c.replay), limit: c.replay.count, after: c.replay.after };
    }
    case "describe": return { kind: "describe", ...at(c.describe) };
    case "promote": return { kind: "promote", ...at(c.promote), group: parseUuid(c.promote.group, "group") };
    case "users": return { kind: "users", tenant: parseUuid(c.users.tenant, "tenant"), room: parseUuid(c.users.room, "room"), limit: c.users.count };
    case "interest":
      if (c.interest.entries.length > ROOM_INTEREST_BATCH) throw new Error(`entries: at most ${ROOM_INTEREST_BATCH}`);
      return { kind: "interest", entries: c.interest.entries.map((e) => ({ tenant: parseUuid(e.tenant, "tenant"), room: parseUuid(e.room, "room"), unit: unitIn(e.unit), count: e.count })) };
    case "broadcast": return { kind: "broadcast", windows: c.broadcast.windows.map(windowIn) };
    case "list": {
      if (c.list.limit < 1 || c.list.limit > ROOM_LIST_LIMIT) throw new Error(`limit: 1 to ${ROOM_LIST_LIMIT}`);
      return { kind: "list", tenant: parseUuid(c.list.tenant, "tenant"), after: c.list.after, limit: c.list.limit };
    }
  }
}

export function answerOut(a: RoomAnswer): Answer {
  switch (a.kind) {
    case "record": return { $case: "record", record: recordOut(a.record) };
    case "window": return { $case: "window", window: windowOut(a.window) };
    case "info": return { $case: "info", info: infoOut(a.info) };
    case "infos": return { $case: "infos", infos: { infos: a.infos.map(infoOut) } };
    case "users": return { $case: "users", users: { users: a.users } };
    case "count": return { $case: "count", count: a.n };
  }
}

export function answerIn(a: Answer | undefined): RoomAnswer {
  if (!a) throw new Error("answer: none");
  switch (a.$case) {
    case "record": return { kind: "record", record: recordIn(a.record) };
    case "window": return { kind: "window", window: windowIn(a.window) };
    case "info": return { kind: "info", info: infoIn(a.info) };
    case "infos": return { kind: "infos", infos: a.infos.infos.map(infoIn) };
    case "users": return { kind: "users", users: a.users.users.map((u) => parseUuid(u, "users")) as Uuid[] };
    case "count": return { kind: "count", n: a.count };
  }
}
