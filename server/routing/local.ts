/**
 * What this node answers to a NodeService call, as plain functions: the gRPC server (server/listeners/node-rpc/server.ts)
 * and the router's local call (router.ts, when this node is the owner) run the same code, so a
 * call to oneself behaves exactly as a call from a peer.
 *
 * The rule of spec 001 §routing, made generic: a receiver that does not own every unit a request
 * names applies nothing and answers STALE_OWNER with its view of the owner; a malformed request is
 * REJECTED (final).
 */
import { parseUuid, QimError, RELAY_BUCKET_COUNT, type DeliveryItem, type EngineRuntime, type UserEventBatch, type Uuid } from "../../core/index.js";
import {
  NodeStatus,
  type DescribeUserRequest,
  type DescribeUserResponse,
  type DeliverRequest,
  type DeliverResponse,
  type KickRequest,
  type KickResponse,
  type PushUserEventsRequest,
  type PushUserEventsResponse,
  type UnitOwner,
} from "../../admin-api/gen/qim/node/v1/node.js";
import { cmdOf, localCmdNode, type CmdNodeHandlers } from "./cmd-local.js";
import type { OwnershipView, UnitKind, UnitOwnerView } from "./ownership.js";

/** Buckets one Kick may name: every relay bucket at most once. */
export const MAX_KICK_BUCKETS = RELAY_BUCKET_COUNT;

export interface NodeHandlers extends CmdNodeHandlers {
  kick(req: KickRequest): Promise<KickResponse>;
  describeUser(req: DescribeUserRequest): Promise<DescribeUserResponse>;
  deliver(req: DeliverRequest): Promise<DeliverResponse>;
  pushUserEvents(req: PushUserEventsRequest): Promise<PushUserEventsResponse>;
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
      let tenant: Uuid;
      const items: { item: DeliveryItem; users: Uuid[] }[] = [];
      try {
        tenant = parseUuid(req.tenant, "tenant");
        for (const i of req.items) {
          items.push({
            item: { tenant, conversation: parseUuid(i.conversation, "conversation"), conversationSeq: Number(i.conversationSeq), entry: i.entry, createdAt: Number(i.createdAtMs) },
            users: i.users.map((u) => parseUuid(u, "users")),
          });
        }
      } catch (err) {
        return { status: NodeStatus.NODE_STATUS_REJECTED, pushed: 0, detail: err instanceof Error ? err.message : String(err) };
      }
      return { status: NodeStatus.NODE_STATUS_OK, pushed: runtime.delivery.local.deliver({ tenant, items }), detail: "" };
    },
    async pushUserEvents(req) {
      let batch: UserEventBatch;
      try {
        const tenant = parseUuid(req.tenant, "tenant");
        batch = {
          tenant,
          events: req.events.map((e) => {
            if (e.event?.$case !== "read") throw new Error("events: an event of a kind this node does not know");
            return {
              user: parseUuid(e.user, "events.user"), exceptDevices: e.exceptDevices,
              event: { kind: "read" as const, conversation: parseUuid(e.event.read.conversation, "events.read.conversation"), readSeq: Number(e.event.read.readSeq) },
            };
          }),
        };
      } catch (err) {
        return { status: NodeStatus.NODE_STATUS_REJECTED, pushed: 0, detail: err instanceof Error ? err.message : String(err) };
      }
      return { status: NodeStatus.NODE_STATUS_OK, pushed: runtime.delivery.local.pushEvents(batch), detail: "" };
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
