/**
 * What this node answers to a NodeService call, as plain functions: the gRPC server (server/listeners/node-rpc/server.ts)
 * and the router's local call (router.ts, when this node is the owner) run the same code, so a
 * call to oneself behaves exactly as a call from a peer.
 *
 * The rule of spec 001 §routing, made generic: a receiver that does not own every unit a request
 * names applies nothing and answers STALE_OWNER with its view of the owner; a malformed request is
 * REJECTED (final).
 */
import { CONNECTIONS_LIST_LIMIT, LOCATE_CHUNK, parseUuid, QimError, StaleOwnerError, RELAY_BUCKET_COUNT, type ConversationEvent, type DeliveryItem, type EngineRuntime, type SessionChange, type SessionRow, type UserEventBatch, type Uuid } from "../../core/index.js";
import {
  NodeStatus,
  type DescribeUserRequest,
  type DescribeUserResponse,
  type DeliverRequest,
  type DeliverResponse,
  type KickRequest,
  type KickResponse,
  type KickConnectionsRequest,
  type KickConnectionsResponse,
  type ListConnectionsRequest,
  type ListConnectionsResponse,
  type PushSessionChangesRequest,
  type PushSessionChangesResponse,
  type PushUserEventsRequest,
  type RoomsRequest,
  type RoomsResponse,
  type PushUserEventsResponse,
  type UnitOwner,
} from "../../admin-api/gen/qim/node/v1/node.js";
import { cmdOf, localCmdNode, type CmdNodeHandlers } from "./cmd-local.js";
import { answerOut, callIn } from "./rooms-wire.js";
import type { OwnershipView, UnitKind, UnitOwnerView } from "./ownership.js";

/** A peer's request parsed, or why not (a REJECTED answer's detail): a peer's bytes are input. */
function parsed<T>(parse: () => T): { ok: true; value: T } | { ok: false; detail: string } {
  try {
    return { ok: true, value: parse() };
  } catch (err) {
    return { ok: false, detail: err instanceof Error ? err.message : String(err) };
  }
}

/** Buckets one Kick may name: every relay bucket at most once. */
export const MAX_KICK_BUCKETS = RELAY_BUCKET_COUNT;

export interface NodeHandlers extends CmdNodeHandlers {
  kick(req: KickRequest): Promise<KickResponse>;
  describeUser(req: DescribeUserRequest): Promise<DescribeUserResponse>;
  deliver(req: DeliverRequest): Promise<DeliverResponse>;
  pushUserEvents(req: PushUserEventsRequest): Promise<PushUserEventsResponse>;
  pushSessionChanges(req: PushSessionChangesRequest): Promise<PushSessionChangesResponse>;
  listConnections(req: ListConnectionsRequest): Promise<ListConnectionsResponse>;
  kickConnections(req: KickConnectionsRequest): Promise<KickConnectionsResponse>;
  rooms(req: RoomsRequest): Promise<RoomsResponse>;
}

/** A unit's owner on the wire (empty strings for "none"). */
export function ownerOut(o: UnitOwnerView): UnitOwner {
  return { kind: o.kind, unit: o.unit, nodeId: o.nodeId ?? "", address: o.address ?? "", token: BigInt(o.token) };
}

function rejectedKick(detail: string): KickResponse {
  return { status: NodeStatus.NODE_STATUS_REJECTED, kicked: [], owners: [], detail };
}

/** The user's slot: the session bucket {uNNN} of (tenant, user). */
export type SlotOf = (tenant: Uuid, user: Uuid) => number;

/**
 * This node's handlers over its engine and its view of ownership. `slotOf` is core/cluster's
 * slotOfUser (the user's session bucket); `address` this node's node.listen as peers reach it.
 */
export function localNode(runtime: EngineRuntime, ownership: OwnershipView, slotOf: SlotOf, address: string): NodeHandlers {
  const staleOwners = async (kind: UnitKind, units: number[]) => Promise.all(units.map(async (u) => ownerOut(await ownership.ownerOf(kind, u))));
  return {
    ...localCmdNode(() => cmdOf(runtime), ownership, slotOf, address),
    async deliver(req) {
      const p = parsed(() => {
        const tenant = parseUuid(req.tenant, "tenant");
        const items = req.items.map((i) => ({
          item: { tenant, conversation: parseUuid(i.conversation, "conversation"), conversationSeq: Number(i.conversationSeq), entry: i.entry, createdAt: Number(i.createdAtMs) } as DeliveryItem,
          users: i.users.map((u) => parseUuid(u, "users")),
          ...(i.members ? { members: true } : {}),
        }));
        return { tenant, items };
      });
      if (!p.ok) return { status: NodeStatus.NODE_STATUS_REJECTED, pushed: 0, detail: p.detail };
      return { status: NodeStatus.NODE_STATUS_OK, pushed: await runtime.delivery.deliverForwarded(p.value), detail: "" };
    },
    async pushUserEvents(req) {
      const p = parsed((): UserEventBatch => ({
        tenant: parseUuid(req.tenant, "tenant"),
        events: req.events.map((e) => {
          const user = parseUuid(e.user, "events.user");
          if (e.event?.$case === "rtc") {
            const r = e.event.rtc;
            return {
              user, exceptDevices: e.exceptDevices,
              event: { kind: "rtc" as const, conversation: parseUuid(r.conversation, "events.rtc.conversation"), fromUser: parseUuid(r.fromUser, "events.rtc.from_user"), fromDevice: r.fromDevice, callId: r.callId, signal: r.kind, payload: r.payload },
            };
          }
          if (e.event?.$case !== "read") throw new Error("events: an event of a kind this node does not know");
          return {
            user, exceptDevices: e.exceptDevices,
            event: { kind: "read" as const, conversation: parseUuid(e.event.read.conversation, "events.read.conversation"), readSeq: Number(e.event.read.readSeq) },
          };
        }),
        conversationEvents: req.conversationEvents.map((e): ConversationEvent => {
          const conversation = parseUuid(e.conversation, "conversation_events.conversation");
          if (e.event?.$case === "typing") {
            const t = e.event.typing;
            return { kind: "typing", conversation, user: parseUuid(t.user, "conversation_events.typing.user"), typing: t.typing, at: Number(t.atMs) };
          }
          if (e.event?.$case !== "reaction") throw new Error("conversation_events: an event of a kind this node does not know");
          const r = e.event.reaction;
          return { kind: "reaction", conversation, conversationSeq: Number(r.conversationSeq), version: Number(r.summaryVersion), counts: r.counts.map((c) => ({ key: c.key, count: Number(c.count) })) };
        }),
        presence: (() => {
          if (req.presenceChanged.length > LOCATE_CHUNK) throw new Error(`presence_changed: at most ${LOCATE_CHUNK} users a call`);
          return req.presenceChanged.map((u) => parseUuid(u, "presence_changed"));
        })(),
      }));
      if (!p.ok) return { status: NodeStatus.NODE_STATUS_REJECTED, pushed: 0, detail: p.detail };
      return { status: NodeStatus.NODE_STATUS_OK, pushed: runtime.delivery.takeEvents(p.value), detail: "" };
    },
    async pushSessionChanges(req) {
      const p = parsed(() => {
        const tenant = parseUuid(req.tenant, "tenant");
        return req.changes.map((b) => sessionChangeOf(JSON.parse(Buffer.from(b).toString("utf8")) as unknown, tenant));
      });
      if (!p.ok) return { status: NodeStatus.NODE_STATUS_REJECTED, taken: 0, detail: p.detail };
      for (const c of p.value) runtime.sessionView.relayed(c);
      return { status: NodeStatus.NODE_STATUS_OK, taken: p.value.length, detail: "" };
    },
    async listConnections(req) {
      const p = parsed(() => {
        const tenant = parseUuid(req.tenant, "tenant");
        const user = req.user === "" ? undefined : parseUuid(req.user, "user");
        if (!Number.isInteger(req.limit) || req.limit < 1 || req.limit > CONNECTIONS_LIST_LIMIT) throw new Error(`limit: 1 to ${CONNECTIONS_LIST_LIMIT}`);
        return runtime.delivery.connections.localRows({ tenant, ...(user ? { user } : {}), limit: req.limit });
      });
      if (!p.ok) return { status: NodeStatus.NODE_STATUS_REJECTED, nodeId: "", connections: [], detail: p.detail };
      return {
        status: NodeStatus.NODE_STATUS_OK, nodeId: ownership.nodeId, detail: "",
        connections: p.value.map((r) => ({
          user: r.user, device: r.device, sinceMs: BigInt(r.sinceMs), remoteAddress: r.remote, framesIn: BigInt(r.framesIn), framesOut: BigInt(r.framesOut), bufferedBytes: BigInt(r.bufferedBytes),
        })),
      };
    },
    async rooms(req): Promise<RoomsResponse> {
      const p = parsed(() => callIn(req.call));
      if (!p.ok) return { status: NodeStatus.NODE_STATUS_REJECTED, detail: p.detail, errorCode: "", errorDetails: "" };
      try {
        return { status: NodeStatus.NODE_STATUS_OK, detail: "", errorCode: "", errorDetails: "", answer: answerOut(await runtime.rooms.serve(p.value, req.fromNodeId)) };
      } catch (err) {
        if (err instanceof StaleOwnerError && "unit" in p.value) {
          return { status: NodeStatus.NODE_STATUS_STALE_OWNER, detail: err.message, errorCode: "", errorDetails: "", owner: ownerOut(await ownership.ownerOf("room", p.value.unit)) };
        }
        // the engine's refusal (room_msg_rate, a promoted room, a room not open): OK on the wire, the domain code for the caller
        if (err instanceof QimError) return { status: NodeStatus.NODE_STATUS_OK, detail: err.message, errorCode: err.code, errorDetails: JSON.stringify(err.details) };
        throw err;
      }
    },
    async kickConnections(req) {
      const p = parsed(() => ({ tenant: parseUuid(req.tenant, "tenant"), user: parseUuid(req.user, "user") }));
      if (!p.ok) return { status: NodeStatus.NODE_STATUS_REJECTED, closed: 0, detail: p.detail };
      return { status: NodeStatus.NODE_STATUS_OK, closed: runtime.delivery.connections.localKick(p.value.tenant, p.value.user, req.device === "" ? null : req.device), detail: "" };
    },
    async kick(req) {
      const buckets = [...new Set(req.buckets)];
      if (buckets.length === 0) return rejectedKick("buckets: name at least one relay bucket");
      if (req.buckets.length > MAX_KICK_BUCKETS) return rejectedKick(`buckets: at most ${MAX_KICK_BUCKETS} per kick`);
      const bad = buckets.find((b) => !Number.isInteger(b) || b < 0 || b >= RELAY_BUCKET_COUNT);
      if (bad !== undefined) return rejectedKick(`buckets: ${bad} is not a relay bucket (0 … ${RELAY_BUCKET_COUNT - 1})`);
      const notMine = buckets.filter((b) => !ownership.owns("relay", b));
      if (notMine.length > 0) {
        // all or nothing: not even the owned ones are kicked, the caller re-routes the whole request
        return {
          status: NodeStatus.NODE_STATUS_STALE_OWNER, kicked: [], owners: await staleOwners("relay", notMine),
          detail: `node ${ownership.nodeId} does not own relay bucket(s) ${notMine.join(", ")}`,
        };
      }
      for (const b of buckets) runtime.relay.kick(b);
      return { status: NodeStatus.NODE_STATUS_OK, kicked: buckets, owners: [], detail: "" };
    },

    async describeUser(req) {
      let tenant: Uuid;
      let user: Uuid;
      try {
        tenant = parseUuid(req.tenant, "tenant");
        user = parseUuid(req.user, "user");
      } catch (err) {
        return { status: NodeStatus.NODE_STATUS_REJECTED, slot: 0, conversations: 0, detail: err instanceof QimError ? err.message : String(err) };
      }
      const slot = slotOf(tenant, user);
      const token = ownership.owns("slot", slot) ? ownership.tokenOf("slot", slot) : null;
      if (token === null) {
        return {
          status: NodeStatus.NODE_STATUS_STALE_OWNER, slot, owner: ownerOut(await ownership.ownerOf("slot", slot)), conversations: 0,
          detail: `node ${ownership.nodeId} does not own slot ${slot}`,
        };
      }
      const conversations = await runtime.projection.sessions.conversationCount(tenant, user);
      return {
        status: NodeStatus.NODE_STATUS_OK, slot, conversations, detail: "",
        owner: { kind: "slot", unit: slot, nodeId: ownership.nodeId, address, token: BigInt(token) },
      };
    },
  };
}

const count = (v: unknown, field: string): number => {
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) throw new Error(`changes: ${field} is not a count`);
  return v;
};
const flag = (v: unknown, field: string): boolean => {
  if (typeof v !== "boolean") throw new Error(`changes: ${field} is not a boolean`);
  return v;
};
const text = (v: unknown, field: string): string => {
  if (typeof v !== "string" || v.length > 200) throw new Error(`changes: ${field} is not a short string`);
  return v;
};
const countOrNull = (v: unknown, field: string): number | null => (v === null || v === undefined ? null : count(v, field));
const intOrNull = (v: unknown, field: string): number | null => {
  if (v === null || v === undefined) return null;
  if (typeof v !== "number" || !Number.isSafeInteger(v)) throw new Error(`changes: ${field} is not an integer`);
  return v;
};

/** A list change as PushSessionChanges carries it (JSON of core's SessionChange), checked field by field: a peer's bytes are input. */
export function sessionChangeOf(x: unknown, tenant: Uuid): SessionChange {
  if (typeof x !== "object" || x === null) throw new Error("changes: not an object");
  const o = x as Record<string, unknown>;
  if (parseUuid(o.tenant, "changes.tenant") !== tenant) throw new Error("changes: a change of another tenant than the request's");
  const user = parseUuid(o.user, "changes.user");
  if (!Array.isArray(o.rows) || o.rows.length > 10_000) throw new Error("changes: rows is not a list (at most 10,000)");
  const rows: SessionRow[] = o.rows.map((r: unknown) => {
    if (typeof r !== "object" || r === null) throw new Error("changes: a row is not an object");
    const w = r as Record<string, unknown>;
    return {
      tenant, user, conversation: parseUuid(w.conversation, "changes.rows.conversation"), lastActivityId: text(w.lastActivityId ?? "", "lastActivityId"),
      lastActivitySeq: count(w.lastActivitySeq ?? 0, "lastActivitySeq"), headSeq: count(w.headSeq, "headSeq"), unread: count(w.unread, "unread"),
      unreadExact: flag(w.unreadExact, "unreadExact"), mentions: count(w.mentions, "mentions"), mentionFirstSeq: countOrNull(w.mentionFirstSeq, "mentionFirstSeq"),
      pinRank: intOrNull(w.pinRank, "pinRank"), muted: flag(w.muted, "muted"), archived: flag(w.archived, "archived"),
      hiddenBeforeSeq: count(w.hiddenBeforeSeq ?? 0, "hiddenBeforeSeq"), deletedBeforeSeq: count(w.deletedBeforeSeq ?? 0, "deletedBeforeSeq"),
      deleted: flag(w.deleted, "deleted"), version: count(w.version, "version"),
    } as SessionRow;
  });
  const b = (o.badge ?? {}) as Record<string, unknown>;
  return {
    tenant, user, rows, version: count(o.version, "version"), drivingEventId: text(o.drivingEventId ?? "", "drivingEventId"), structural: flag(o.structural, "structural"),
    badge: { totalUnread: count(b.totalUnread, "badge.totalUnread"), totalMention: count(b.totalMention, "badge.totalMention"), mutedUnread: count(b.mutedUnread, "badge.mutedUnread"), version: count(b.version, "badge.version") },
  };
}
