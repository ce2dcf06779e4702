/**
 * NodeRouter: spec 001's routing rule made generic (issue 11). Resolve the owner of a unit, call
 * it — in process when the owner is this node, else its NodeService — and on STALE_OWNER
 * re-resolve and retry once; REJECTED is final; a second STALE_OWNER is core's StaleOwnerError
 * (code STALE_OWNER: retryable by the caller's caller, UNAVAILABLE at the admin API, 503 over HTTP).
 *
 * It lives here, beside the client, rather than in core/cluster: what it routes are NodeService
 * calls and their NodeStatus (generated protobuf types), and core must not know gRPC. The part of
 * the cluster it needs is the narrow OwnershipView (ownership.ts), which ClusterMembership
 * satisfies. Resolved owners are cached (ownerCacheMs) so that a busy path does not read the
 * registry per call; a STALE_OWNER or a failed call drops the entry — a moved unit costs one hop.
 */
import { InvalidArgumentError, StaleOwnerError, UnavailableError, DELIVERY_FORWARD_MAX_BYTES, parseUuid, type ConnectionPeers, type ConnectionRow, type DeliveryBatch, type Located, type RelayedChange, type UserEventBatch, type Uuid } from "../../core/index.js";
import {
  NodeStatus,
  type CmdPendingResponse,
  type DescribeUserResponse,
  type KickResponse,
  type UnitOwner,
} from "../../admin-api/gen/qim/node/v1/node.js";
import { NodeCallError, type NodePeers } from "./client.js";
import type { NodeHandlers } from "./local.js";
import { nodeMetrics } from "./metrics.js";
import type { OwnershipView, UnitKind, UnitOwnerView } from "./ownership.js";

/** How long a resolved owner is reused before the registry is read again (a stale one costs a STALE_OWNER hop). */
export const DEFAULT_OWNER_CACHE_MS = 1000;

/** The owner did not own the unit, and neither did the one the re-resolve named: nothing applied, retry later (core's StaleOwnerError). */
function movingOwnership(kind: UnitKind, unit: number, tried: readonly string[]): StaleOwnerError {
  return new StaleOwnerError(`${kind} ${unit}: ownership is moving (asked ${tried.join(", then ")}: each answered stale owner); nothing was applied, retry`, { kind, unit, tried: [...tried] });
}

export interface RouteResult<Res> {
  response: Res;
  /** The owner that answered OK. */
  owner: UnitOwnerView;
  /** 1, or 2 after a STALE_OWNER. */
  attempts: number;
  /** Whether the owner was this node (no network call). */
  local: boolean;
}

export interface NodeRouterOptions {
  ownership: OwnershipView;
  /** This node's own handlers (local.ts), for units it owns. */
  local: NodeHandlers;
  peers: NodePeers;
  ownerCacheMs?: number;
}

type Answer = { status: NodeStatus; detail: string };

const statusName = (s: NodeStatus) => NodeStatus[s]?.replace(/^NODE_STATUS_/, "") ?? String(s);
const GRPC_CODE_NAMES = ["OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED",
  "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"];

/** A receiver's view of a unit's owner from its STALE_OWNER answer (null when it names none): where the retry goes. */
export function hintOut(o: UnitOwner | undefined): UnitOwnerView | null {
  if (!o || !o.nodeId) return null;
  return { kind: o.kind as UnitKind, unit: o.unit, nodeId: o.nodeId, address: o.address || null, token: Number(o.token), alive: true };
}

export class NodeRouter {
  private readonly cache = new Map<string, { owner: UnitOwnerView; at: number }>();
  private readonly cacheMs: number;
  /** Kicks waiting for the end of this turn of the event loop, per owner address. */

  constructor(private readonly opts: NodeRouterOptions) {
    this.cacheMs = opts.ownerCacheMs ?? DEFAULT_OWNER_CACHE_MS;
  }

  /** The owner of a unit: the cached answer when it is recent, else the registry's. */
  async resolve(kind: UnitKind, unit: number, fresh = false): Promise<UnitOwnerView> {
    const key = `${kind}:${unit}`;
    const hit = this.cache.get(key);
    if (!fresh && hit && Date.now() - hit.at < this.cacheMs) return hit.owner;
    const owner = await this.opts.ownership.ownerOf(kind, unit);
    if (owner.nodeId) this.cache.set(key, { owner, at: Date.now() });
    else this.cache.delete(key);
    return owner;
  }

  /** Forgets a cached owner (it answered STALE_OWNER, or could not be reached). */
  forget(kind: UnitKind, unit: number): void {
    this.cache.delete(`${kind}:${unit}`);
  }

  private handlersOf(owner: UnitOwnerView): { handlers: NodeHandlers; local: boolean; target: string } {
    if (owner.nodeId === this.opts.ownership.nodeId) return { handlers: this.opts.local, local: true, target: "local" };
    if (!owner.address) throw new UnavailableError(`node ${owner.nodeId} owns ${owner.kind} ${owner.unit} but registered no node address`);
    return { handlers: this.opts.peers.at(owner.address), local: false, target: "remote" };
  }

  /**
   * One routed call of a unit: resolve → call → on STALE_OWNER re-resolve (the registry; the
   * stale receiver's hint when the registry still names the receiver) and retry once. `call`
   * learns whether the owner is this node (`local`), so that it may serve the call in process on
   * typed values instead of through the handlers' wire types.
   */
  async route<Res extends Answer>(
    rpc: string, kind: UnitKind, unit: number, call: (h: NodeHandlers, local: boolean) => Promise<Res>, hintOf: (res: Res) => UnitOwnerView | null,
  ): Promise<RouteResult<Res>> {
    const tried: string[] = [];
    let owner = await this.resolve(kind, unit);
    for (let attempt = 1; ; attempt++) {
      if (!owner.nodeId) {
        nodeMetrics.calls.inc({ rpc, target: "none", status: "NO_OWNER" });
        throw new UnavailableError(`${kind} ${unit} has no live owner right now (a lease is being taken over); retry`);
      }
      const { handlers, local, target } = this.handlersOf(owner);
      let res: Res;
      try {
        res = await call(handlers, local);
      } catch (err) {
        this.forget(kind, unit);
        if (err instanceof NodeCallError) {
          nodeMetrics.calls.inc({ rpc, target, status: GRPC_CODE_NAMES[err.code] ?? String(err.code) });
          throw new UnavailableError(`the owner of ${kind} ${unit}, node ${owner.nodeId}, could not be reached: ${err.message}`);
        }
        nodeMetrics.calls.inc({ rpc, target, status: "INTERNAL" });
        throw err;
      }
      nodeMetrics.calls.inc({ rpc, target, status: statusName(res.status) });
      tried.push(owner.nodeId);
      if (res.status === NodeStatus.NODE_STATUS_OK) return { response: res, owner, attempts: attempt, local };
      if (res.status !== NodeStatus.NODE_STATUS_STALE_OWNER) throw new InvalidArgumentError("request", `node ${owner.nodeId} rejected the ${rpc}: ${res.detail}`);
      this.forget(kind, unit);
      if (attempt >= 2) throw movingOwnership(kind, unit, tried);
      const stale = owner.nodeId;
      const fresh = await this.resolve(kind, unit, true);
      const hint = hintOf(res);
      owner = fresh.nodeId === stale && hint && hint.nodeId !== stale ? hint : fresh;
    }
  }

  /** NodeService.DescribeUser at the owner of the user's slot. */
  describeUser(tenant: string, user: string, slot: number): Promise<RouteResult<DescribeUserResponse>> {
    const req = { tenant, user, fromNodeId: this.opts.ownership.nodeId };
    return this.route("DescribeUser", "slot", slot, (h) => h.describeUser(req), (res) => hintOut(res.owner));
  }

  /** NodeService.CmdPending at the owner of the user's slot. */
  cmdPending(tenant: string, user: string, slot: number, limit: number): Promise<RouteResult<CmdPendingResponse>> {
    const req = { tenant, user, limit, fromNodeId: this.opts.ownership.nodeId };
    return this.route("CmdPending", "slot", slot, (h) => h.cmdPending(req), (res) => hintOut(res.owner));
  }

  /** The handlers of a node by its registered owner view: this node's own in process, a peer's over the network. */
  handlersFor(owner: UnitOwnerView): { handlers: NodeHandlers; local: boolean; target: string } {
    return this.handlersOf(owner);
  }

  /**
   * The relay's kick forwarder (ClusterMembership.setKickForwarder): a commit on a bucket owned
   * elsewhere is handed to that bucket's owner. The membership already gathers the kicks of one
   * turn of the event loop per owner, so each call here is one Kick. Never rejects: a kick that
   * fails is harmless (the owner's sweep relays the commit) and is counted in
   * qim_relay_kicks_forward_failed_total.
   */
  readonly forwardKick = (owner: UnitOwnerView, buckets: number[]): Promise<void> => this.sendKick(owner, buckets);

  /**
   * The delivery consumer's forwarder (core/delivery): a batch of committed messages for devices
   * connected to another node, by its registered address. Rejects on failure (the consumer retries
   * a few times, then gives the pushes up: devices resync by pulling).
   */
  readonly forwardDelivery = async (to: Located, batch: DeliveryBatch): Promise<void> => {
    if (!to.address) throw new UnavailableError(`node ${to.nodeId} holds connections but registered no node address`);
    const req = {
      tenant: batch.tenant, fromNodeId: this.opts.ownership.nodeId,
      items: batch.items.map(({ item, users, members }) => ({ conversation: item.conversation, conversationSeq: BigInt(item.conversationSeq), entry: item.entry, createdAtMs: BigInt(item.createdAt), users, members: members === true })),
    };
    let res;
    try {
      res = await this.opts.peers.at(to.address).deliver(req);
    } catch (err) {
      nodeMetrics.calls.inc({ rpc: "Deliver", target: "remote", status: err instanceof NodeCallError ? GRPC_CODE_NAMES[err.code] ?? String(err.code) : "ERROR" });
      throw err;
    }
    nodeMetrics.calls.inc({ rpc: "Deliver", target: "remote", status: statusName(res.status) });
    if (res.status !== NodeStatus.NODE_STATUS_OK) throw new UnavailableError(`Deliver to ${to.nodeId}: ${res.detail}`);
  };

  /** The read sync's and the conversation events' forwarder (core/delivery): events for devices connected to another node. Rejects on failure. */
  readonly forwardUserEvents = async (to: Located, batch: UserEventBatch): Promise<void> => {
    if (!to.address) throw new UnavailableError(`node ${to.nodeId} holds connections but registered no node address`);
    const req = {
      tenant: batch.tenant, fromNodeId: this.opts.ownership.nodeId,
      events: batch.events.map(({ user, event, exceptDevices }) => ({
        user, exceptDevices,
        event: event.kind === "read"
          ? { $case: "read" as const, read: { conversation: event.conversation, readSeq: BigInt(event.readSeq) } }
          : { $case: "rtc" as const, rtc: { conversation: event.conversation, fromUser: event.fromUser, fromDevice: event.fromDevice, callId: event.callId, kind: event.signal, payload: Buffer.from(event.payload.buffer, event.payload.byteOffset, event.payload.byteLength) } },
      })),
      conversationEvents: (batch.conversationEvents ?? []).map((e) => ({
        conversation: e.conversation,
        event: e.kind === "reaction"
          ? { $case: "reaction" as const, reaction: { conversationSeq: BigInt(e.conversationSeq), summaryVersion: BigInt(e.version), counts: e.counts.map((c) => ({ key: c.key, count: BigInt(c.count) })) } }
          : { $case: "typing" as const, typing: { user: e.user, typing: e.typing, atMs: BigInt(e.at) } },
      })),
      presenceChanged: batch.presence ?? [],
    };
    let res;
    try {
      res = await this.opts.peers.at(to.address).pushUserEvents(req);
    } catch (err) {
      nodeMetrics.calls.inc({ rpc: "PushUserEvents", target: "remote", status: err instanceof NodeCallError ? GRPC_CODE_NAMES[err.code] ?? String(err.code) : "ERROR" });
      throw err;
    }
    nodeMetrics.calls.inc({ rpc: "PushUserEvents", target: "remote", status: statusName(res.status) });
    if (res.status !== NodeStatus.NODE_STATUS_OK) throw new UnavailableError(`PushUserEvents to ${to.nodeId}: ${res.detail}`);
  };

  /**
   * The list-change relay's forwarder (core/delivery): changes of users' lists for their devices on
   * another node, as JSON, in calls of at most DELIVERY_FORWARD_MAX_BYTES. Rejects on failure.
   */
  readonly forwardSessionChanges = async (to: Located, tenant: Uuid, changes: RelayedChange[]): Promise<void> => {
    if (!to.address) throw new UnavailableError(`node ${to.nodeId} holds connections but registered no node address`);
    const encoded = changes.map((c) => Buffer.from(JSON.stringify(c), "utf8"));
    for (let i = 0; i < encoded.length;) {
      const part: Buffer[] = [];
      let bytes = 0;
      while (i < encoded.length && (part.length === 0 || bytes + encoded[i]!.length <= DELIVERY_FORWARD_MAX_BYTES)) {
        bytes += encoded[i]!.length;
        part.push(encoded[i++]!);
      }
      let res;
      try {
        res = await this.opts.peers.at(to.address).pushSessionChanges({ tenant, fromNodeId: this.opts.ownership.nodeId, changes: part });
      } catch (err) {
        nodeMetrics.calls.inc({ rpc: "PushSessionChanges", target: "remote", status: err instanceof NodeCallError ? GRPC_CODE_NAMES[err.code] ?? String(err.code) : "ERROR" });
        throw err;
      }
      nodeMetrics.calls.inc({ rpc: "PushSessionChanges", target: "remote", status: statusName(res.status) });
      if (res.status !== NodeStatus.NODE_STATUS_OK) throw new UnavailableError(`PushSessionChanges to ${to.nodeId}: ${res.detail}`);
    }
  };

  /** Operators' connections list and kick on another node (core/delivery's ConnectionsView). */
  readonly connectionPeers: ConnectionPeers = {
    list: async (to, q): Promise<ConnectionRow[]> => {
      const res = await this.opts.peers.at(to.address).listConnections({ tenant: q.tenant, user: q.user ?? "", limit: q.limit });
      nodeMetrics.calls.inc({ rpc: "ListConnections", target: "remote", status: statusName(res.status) });
      if (res.status !== NodeStatus.NODE_STATUS_OK) throw new UnavailableError(`ListConnections at ${to.nodeId}: ${res.detail}`);
      return res.connections.map((c) => ({
        nodeId: to.nodeId, tenant: q.tenant, user: parseUuid(c.user, "user"), device: c.device, sinceMs: Number(c.sinceMs), remote: c.remoteAddress,
        framesIn: Number(c.framesIn), framesOut: Number(c.framesOut), bufferedBytes: Number(c.bufferedBytes),
      }));
    },
    kick: async (to, tenant, user, device): Promise<number> => {
      const res = await this.opts.peers.at(to.address).kickConnections({ tenant, user, device: device ?? "" });
      nodeMetrics.calls.inc({ rpc: "KickConnections", target: "remote", status: statusName(res.status) });
      if (res.status !== NodeStatus.NODE_STATUS_OK) throw new UnavailableError(`KickConnections at ${to.nodeId}: ${res.detail}`);
      return res.closed;
    },
  };

  /** One Kick to `owner`; on STALE_OWNER each bucket is re-resolved and the buckets re-sent once, grouped by their new owners. */
  private async sendKick(owner: UnitOwnerView, buckets: number[], retry = true): Promise<void> {
    let res: KickResponse;
    let target = "remote";
    try {
      if (!owner.nodeId) throw new UnavailableError("no owner");
      const h = this.handlersOf(owner);
      target = h.target;
      res = await h.handlers.kick({ buckets, fromNodeId: this.opts.ownership.nodeId });
    } catch (err) {
      nodeMetrics.calls.inc({ rpc: "Kick", target, status: err instanceof NodeCallError ? GRPC_CODE_NAMES[err.code] ?? String(err.code) : "NO_OWNER" });
      nodeMetrics.kicksForwardFailed.inc(buckets.length);
      for (const b of buckets) this.forget("relay", b);
      return;
    }
    nodeMetrics.calls.inc({ rpc: "Kick", target, status: statusName(res.status) });
    if (res.status === NodeStatus.NODE_STATUS_OK) {
      nodeMetrics.kicksForwarded.inc(res.kicked.length);
      return;
    }
    if (res.status !== NodeStatus.NODE_STATUS_STALE_OWNER || !retry) {
      nodeMetrics.kicksForwardFailed.inc(buckets.length);
      return;
    }
    // all or nothing on the receiver: re-route every bucket of the batch by the registry's answer
    const groups = new Map<string, { owner: UnitOwnerView; buckets: number[] }>();
    for (const b of buckets) {
      this.forget("relay", b);
      const o = await this.resolve("relay", b, true).catch(() => null);
      if (!o || !o.nodeId) {
        nodeMetrics.kicksForwardFailed.inc();
        continue;
      }
      const g = groups.get(o.nodeId) ?? { owner: o, buckets: [] };
      g.buckets.push(b);
      groups.set(o.nodeId, g);
    }
    await Promise.all([...groups.values()].map((g) => this.sendKick(g.owner, g.buckets, false)));
  }
}
