/**
 * CMD sync routing between nodes (spec 001 §routing, issue 13), over the node service:
 *
 * - the intent router (core/cmd-sync CmdIntentRouter, installed with runtime.cmd.setRouter): an
 *   intent is split by the owner of each recipient's slot (splitIntentByOwner), the local group
 *   goes to this node's buffer (acceptIntent), every other group to its owner's PushIntents; a
 *   STALE_OWNER (or a stale local buffer) re-resolves the owners from the registry and re-routes
 *   that group once; true only when every group was accepted. It never rejects: a failure is
 *   counted (qim_cmd_intents_routed_total) and the owner's catch-up scan derives the intent again.
 * - the user operations of the surfaces (gRPC CmdService, HTTP /message/sync): sync, ack and the
 *   pending view at the owner of the user's slot (NodeRouter.route: one hop after a move), a flush
 *   at a named node.
 *
 * When the owner is this node, the call runs in process on typed values (localCmdOps); only a call
 * to a peer is encoded to the node wire types. Outside a cluster (or without a node service)
 * localCmdAccess serves everything from this node. The surfaces hand typed values (Uuid,
 * BoundedLimit) parsed where the request entered; nothing here parses or bounds them again.
 */
import {
  encodeIntent,
  FailedPreconditionError,
  parseUuid,
  splitIntentByOwner,
  UnavailableError,
  NotFoundError,
  type BoundedLimit,
  type CmdAckResult,
  type CmdFlushReport,
  type CmdIntentRouter,
  type CmdMessage,
  type CmdSyncApi,
  type CmdSyncMode,
  type CmdSyncResult,
  type ConversationIntent,
  type NodeRecord,
  type PendingConversationView,
  type Uuid,
} from "../../core/index.js";
import { NodeStatus } from "../../admin-api/gen/qim/node/v1/node.js";
import { NodeCallError } from "./client.js";
import type { NodeHandlers } from "./local.js";
import { cmdMessageFromWire, localCmdOps, type CmdLocalOps, type CmdServed } from "./cmd-local.js";
import { cmdSurfaceMetrics } from "./cmd-metrics.js";
import type { OwnershipView, UnitOwnerView } from "./ownership.js";
import { hintOut, type NodeRouter } from "./router.js";

/** What the CMD surfaces (CmdService, the HTTP API) call: each operation at the owner of the user's slot. */
export interface CmdAccess {
  readonly api: CmdSyncApi;
  /** mode "peek" (an operator's look) records no generation: generation null. */
  sync(tenant: Uuid, user: Uuid, limit: BoundedLimit, mode?: CmdSyncMode): Promise<{ messages: CmdMessage[]; generation: number | null; servedBy: string }>;
  ack(tenant: Uuid, user: Uuid, lastMessageSeq: number): Promise<CmdAckResult & { servedBy: string }>;
  pending(tenant: Uuid, user: Uuid, limit: BoundedLimit): Promise<{ views: PendingConversationView[]; servedBy: string }>;
  /** One bounded flush of a node's buffer; null: this node. */
  flush(nodeId: string | null): Promise<CmdFlushReport & { nodeId: string }>;
}

/** Every operation on this node (no cluster, or a cluster node without a node service: a user owned elsewhere is STALE_OWNER). */
export function localCmdAccess(api: CmdSyncApi, nodeId: string): CmdAccess {
  return {
    api,
    async sync(tenant, user, limit, mode = "record") {
      const r = await api.syncLocal(tenant, user, limit, mode);
      return { messages: r.messages, generation: r.generation, servedBy: nodeId };
    },
    async ack(tenant, user, lastMessageSeq) {
      return { ...(await api.ackLocal(tenant, user, lastMessageSeq)), servedBy: nodeId };
    },
    async pending(tenant, user, limit) {
      return { views: api.pendingLocal(tenant, user, limit), servedBy: nodeId };
    },
    async flush(target) {
      // not a transient failure (retrying changes nothing): this server has no way to reach another node
      if (target !== null && target !== nodeId) throw new FailedPreconditionError(`this server cannot reach node ${target}: it has no node service (node.listen with a node certificate); ask that node's own admin API, or name this node (${nodeId || "no node id"})`);
      return { ...(await api.flush()), nodeId };
    },
  };
}

export interface CmdRouterOptions {
  api: CmdSyncApi;
  ownership: OwnershipView;
  router: NodeRouter;
  slotOf: (tenant: Uuid, user: Uuid) => number;
  /** The registry's nodes (for a flush at a named node). */
  nodes: () => Promise<NodeRecord[]>;
  log?: (line: string) => void;
}

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

/** A user operation's answer at either end of a route: this node's typed one, or a peer's decoded from the wire. */
type Served<T> = CmdServed<T> | { status: NodeStatus; detail: string; owner: UnitOwnerView | null; result: T };

export class CmdRouter implements CmdIntentRouter, CmdAccess {
  readonly api: CmdSyncApi;
  private readonly local: CmdLocalOps;

  constructor(private readonly opts: CmdRouterOptions) {
    this.api = opts.api;
    this.local = localCmdOps(() => opts.api, opts.ownership, opts.slotOf);
  }

  /**
   * One user operation at the owner of the user's slot (NodeRouter.route: resolve, call, one
   * re-resolve and retry after STALE_OWNER): in process with `local` when the owner is this node,
   * else `remote` over the node service.
   */
  private async atOwner<T>(rpc: string, tenant: Uuid, user: Uuid, local: () => Promise<CmdServed<T>>, remote: (h: NodeHandlers) => Promise<Served<T>>): Promise<{ result: T; servedBy: string }> {
    const r = await this.opts.router.route<Served<T>>(rpc, "slot", this.opts.slotOf(tenant, user), (h, isLocal) => (isLocal ? local() : remote(h)), (res) => ("owner" in res && res.owner?.nodeId ? res.owner : null));
    // route answers only an OK, and every OK carries its result
    return { result: (r.response as { result: T }).result, servedBy: r.owner.nodeId ?? "" };
  }

  /** CmdIntentRouter: never rejects; true only when every owner group accepted. */
  async pushIntent(intent: ConversationIntent): Promise<boolean> {
    try {
      return await this.route(intent, true);
    } catch (err) {
      cmdSurfaceMetrics.intentsRouted.inc({ target: "none", outcome: "FAILED" });
      this.opts.log?.(`cmd sync: routing an intent of ${intent.channel.channelId}/${intent.channel.channelType} seq ${intent.messageSeq} failed: ${messageOf(err)} (the owners' catch-up scan derives it)`);
      return false;
    }
  }

  /** Resolves the owner of every recipient's slot (fresh: the registry, not the cache), splits, sends each group. */
  private async route(intent: ConversationIntent, retry: boolean): Promise<boolean> {
    const { slotOf, router } = this.opts;
    const slots = new Set<number>();
    for (const user of intent.userReadSeqs.keys()) slots.add(slotOf(intent.tenant, user));
    const owners = new Map<number, UnitOwnerView>();
    await Promise.all([...slots].map(async (s) => owners.set(s, await router.resolve("slot", s, !retry))));
    const byNode = new Map<string, UnitOwnerView>();
    for (const o of owners.values()) if (o.nodeId) byNode.set(o.nodeId, o);
    const groups = splitIntentByOwner(intent, (tenant, user) => owners.get(slotOf(tenant, user))?.nodeId ?? "");
    const results = await Promise.all([...groups].map(([nodeId, sub]) => this.sendGroup(byNode.get(nodeId) ?? null, sub, retry)));
    return results.every(Boolean);
  }

  private forgetSlots(intent: ConversationIntent): void {
    for (const user of intent.userReadSeqs.keys()) this.opts.router.forget("slot", this.opts.slotOf(intent.tenant, user));
  }

  private async sendGroup(owner: UnitOwnerView | null, sub: ConversationIntent, retry: boolean): Promise<boolean> {
    if (!owner || !owner.nodeId) {
      cmdSurfaceMetrics.intentsRouted.inc({ target: "none", outcome: "NO_OWNER" });
      return false;
    }
    if (owner.nodeId === this.opts.ownership.nodeId) {
      const r = this.opts.api.acceptIntent(sub);
      cmdSurfaceMetrics.intentsRouted.inc({ target: "local", outcome: r === "ok" ? "OK" : r === "dropped" ? "DROPPED" : "STALE_OWNER" });
      if (r === "ok") return true;
      if (r === "dropped") return false;
      this.forgetSlots(sub);
      return retry ? this.route(sub, false) : false;
    }
    if (!owner.address) {
      cmdSurfaceMetrics.intentsRouted.inc({ target: "remote", outcome: "NO_OWNER" });
      return false;
    }
    const { handlers } = this.opts.router.handlersFor(owner);
    let res;
    try {
      res = await handlers.pushIntents({ intents: [Buffer.from(encodeIntent(sub))], fromNodeId: this.opts.ownership.nodeId });
    } catch (err) {
      this.forgetSlots(sub);
      cmdSurfaceMetrics.intentsRouted.inc({ target: "remote", outcome: "FAILED" });
      if (!(err instanceof NodeCallError)) throw err;
      return false;
    }
    if (res.status === NodeStatus.NODE_STATUS_OK) {
      cmdSurfaceMetrics.intentsRouted.inc({ target: "remote", outcome: res.dropped > 0 ? "DROPPED" : "OK" });
      return res.dropped === 0;
    }
    if (res.status === NodeStatus.NODE_STATUS_STALE_OWNER) {
      cmdSurfaceMetrics.intentsRouted.inc({ target: "remote", outcome: "STALE_OWNER" });
      this.forgetSlots(sub);
      return retry ? this.route(sub, false) : false;
    }
    cmdSurfaceMetrics.intentsRouted.inc({ target: "remote", outcome: "REJECTED" });
    this.opts.log?.(`cmd sync: node ${owner.nodeId} rejected an intent: ${res.detail}`);
    return false;
  }

  async sync(tenant: Uuid, user: Uuid, limit: BoundedLimit, mode: CmdSyncMode = "record") {
    const fromNodeId = this.opts.ownership.nodeId;
    const { result, servedBy } = await this.atOwner<CmdSyncResult>("CmdSync", tenant, user, () => this.local.sync(tenant, user, limit, mode), async (h) => {
      const res = await h.cmdSync({ tenant, user, limit, fromNodeId, peek: mode === "peek" });
      return { status: res.status, detail: res.detail, owner: hintOut(res.owner), result: { messages: res.messages.map(cmdMessageFromWire), generation: mode === "peek" ? null : Number(res.generation) } };
    });
    return { messages: result.messages, generation: mode === "peek" ? null : result.generation, servedBy };
  }

  async ack(tenant: Uuid, user: Uuid, lastMessageSeq: number) {
    const fromNodeId = this.opts.ownership.nodeId;
    const { result, servedBy } = await this.atOwner<CmdAckResult>("CmdAck", tenant, user, () => this.local.ack(tenant, user, lastMessageSeq), async (h) => {
      const a = await h.cmdAck({ tenant, user, lastMessageSeq: BigInt(lastMessageSeq), fromNodeId });
      return { status: a.status, detail: a.detail, owner: hintOut(a.owner), result: { generation: a.generation === 0n ? null : Number(a.generation), advanced: a.advanced, cleared: a.cleared, warning: a.warning || null } };
    });
    return { ...result, servedBy };
  }

  async pending(tenant: Uuid, user: Uuid, limit: BoundedLimit) {
    const fromNodeId = this.opts.ownership.nodeId;
    const { result, servedBy } = await this.atOwner<PendingConversationView[]>("CmdPending", tenant, user, () => this.local.pending(tenant, user, limit), async (h) => {
      const res = await h.cmdPending({ tenant, user, limit, fromNodeId });
      const views = res.views.map((v): PendingConversationView => ({
        channel: { channelId: v.channelId, channelType: v.channelType }, lastMsgSeq: Number(v.lastMsgSeq), activeAt: Number(v.activeAt), readSeq: Number(v.readSeq),
      }));
      return { status: res.status, detail: res.detail, owner: hintOut(res.owner), result: views };
    });
    return { views: result, servedBy };
  }

  async flush(nodeId: string | null) {
    const self = this.opts.ownership.nodeId;
    const target = nodeId ?? self;
    if (target === self) return { ...(await this.opts.api.flush()), nodeId: self };
    const node = (await this.opts.nodes()).find((n) => n.nodeId === target);
    if (!node) throw new NotFoundError("node", target);
    if (!node.alive || !node.address) throw new UnavailableError(`node ${target} is not alive or registered no node address; nothing was flushed`);
    const { handlers } = this.opts.router.handlersFor({ kind: "slot", unit: 0, nodeId: node.nodeId, address: node.address, token: 0, alive: node.alive });
    let res;
    try {
      res = await handlers.cmdFlush({ fromNodeId: self });
    } catch (err) {
      throw new UnavailableError(`node ${target} could not be reached: ${messageOf(err)}`);
    }
    if (res.status !== NodeStatus.NODE_STATUS_OK) throw new UnavailableError(`node ${target}: ${res.detail}`);
    return { rows: res.rows, batches: res.batches, failedBatches: res.failedBatches, nodeId: res.nodeId };
  }
}

/** Parses a tenant and user or throws INVALID_ARGUMENT naming the field. */
export function userOf(tenant: unknown, user: unknown, fields: { tenant: string; user: string } = { tenant: "tenant", user: "user" }): { tenant: Uuid; user: Uuid } {
  return { tenant: parseUuid(tenant, fields.tenant), user: parseUuid(user, fields.user) };
}
