/**
 * What this node answers to the CMD sync calls of the node service (spec 001, issue 13):
 * PushIntents (routed intents for users whose slot this node owns), CmdSync / CmdAck / CmdPending
 * (served by the owner of the user's slot), CmdFlush. Plain functions like local.ts. The user
 * operations are localCmdOps on typed values: the router calls them in process when this node is
 * the owner, and the node service's handlers wrap them in the wire types for peers; either way the
 * same ownership rule applies.
 *
 * The rule of spec 001 §routing: a receiver checks that it owns the slot of every user the request
 * names and otherwise applies nothing and answers STALE_OWNER with its view of each owner; bytes
 * that do not decode, or an intent that does not validate (read seq above the message seq, a
 * blank UID, channel type 0), are REJECTED — final, never retried.
 */
import {
  cmdSyncLimit,
  decodeIntent,
  MAX_PUSH_INTENTS,
  FailedPreconditionError,
  parseUuid,
  QimError,
  type BoundedLimit,
  type CmdAckResult,
  type CmdMessage,
  type CmdSyncApi,
  type CmdSyncMode,
  type CmdSyncResult,
  type ConversationIntent,
  type EngineRuntime,
  type PendingConversationView,
  type Uuid,
} from "../../core/index.js";
import {
  NodeStatus,
  type CmdAckRequest,
  type CmdAckResponse,
  type CmdFlushRequest,
  type CmdFlushResponse,
  type CmdMessageWire,
  type CmdPendingRequest,
  type CmdPendingResponse,
  type CmdSyncRequest,
  type CmdSyncResponse,
  type PushIntentsRequest,
  type PushIntentsResponse,
  type UnitOwner,
} from "../../admin-api/gen/qim/node/v1/node.js";
import { cmdSurfaceMetrics } from "./cmd-metrics.js";
import type { OwnershipView, UnitOwnerView } from "./ownership.js";


export interface CmdNodeHandlers {
  pushIntents(req: PushIntentsRequest): Promise<PushIntentsResponse>;
  cmdSync(req: CmdSyncRequest): Promise<CmdSyncResponse>;
  cmdAck(req: CmdAckRequest): Promise<CmdAckResponse>;
  cmdPending(req: CmdPendingRequest): Promise<CmdPendingResponse>;
  cmdFlush(req: CmdFlushRequest): Promise<CmdFlushResponse>;
}

/** The runtime's CMD sync module (core/cmd-sync CmdSync, registered as runtime.cmd). */
export function cmdOf(runtime: EngineRuntime): CmdSyncApi {
  const cmd = maybeCmdOf(runtime);
  if (!cmd) throw new FailedPreconditionError("this engine runs without the CMD sync module");
  return cmd;
}

/** runtime.cmd, or null when the engine was built without it (a runtime stand-in of a test). */
export function maybeCmdOf(runtime: EngineRuntime): CmdSyncApi | null {
  return (runtime.cmd as CmdSyncApi | undefined) ?? null;
}

/** Whether an error is STALE_OWNER: the user's slot is owned by another node (or a fenced write). */
export function isStaleOwner(err: unknown): boolean {
  return err instanceof QimError && err.code === "STALE_OWNER";
}

export function cmdMessageToWire(m: CmdMessage): CmdMessageWire {
  return {
    tenant: m.tenant, channelId: m.channel.channelId, channelType: m.channel.channelType, messageSeq: BigInt(m.messageSeq),
    messageId: m.messageId, clientMsgNo: m.clientMsgNo, from: m.from ?? "", timestampMs: BigInt(m.timestampMs),
    redDot: m.redDot, syncOnce: m.syncOnce, noPersist: m.noPersist, payload: Buffer.from(m.payload), recipients: [...m.recipients],
  };
}

export function cmdMessageFromWire(w: CmdMessageWire): CmdMessage {
  return {
    tenant: parseUuid(w.tenant, "tenant"), channel: { channelId: w.channelId, channelType: w.channelType }, messageSeq: Number(w.messageSeq),
    messageId: parseUuid(w.messageId, "message_id"), clientMsgNo: w.clientMsgNo, from: w.from ? parseUuid(w.from, "from") : null,
    timestampMs: Number(w.timestampMs), redDot: w.redDot, syncOnce: w.syncOnce, noPersist: w.noPersist,
    payload: new Uint8Array(w.payload), recipients: w.recipients.map((r) => parseUuid(r, "recipients")),
  };
}

/** A unit's owner on the wire (empty strings for "none"). */
function ownerWire(o: UnitOwnerView): UnitOwner {
  return { kind: o.kind, unit: o.unit, nodeId: o.nodeId ?? "", address: o.address ?? "", token: BigInt(o.token) };
}

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

/**
 * A user's CMD call answered by this node with typed values: OK with the engine's result, or
 * STALE_OWNER (nothing applied) with the owner this node sees, which the router tries next.
 */
export type CmdServed<T> =
  | { status: NodeStatus.NODE_STATUS_OK; detail: ""; slot: number; result: T }
  | { status: NodeStatus.NODE_STATUS_STALE_OWNER; detail: string; slot: number; owner: UnitOwnerView };

/**
 * The user operations of this node's CMD module, at the owner of the user's slot (spec 001
 * §routing): the node service's handlers (below) and the router's in-process call (cmd-router.ts,
 * when the owner is this node) run these, so a call to oneself applies the same ownership rule
 * as a call from a peer, without converting anything to the node wire types and back. The values
 * were parsed where the request entered; nothing is checked again here.
 */
export interface CmdLocalOps {
  sync(tenant: Uuid, user: Uuid, limit: BoundedLimit, mode: CmdSyncMode): Promise<CmdServed<CmdSyncResult>>;
  ack(tenant: Uuid, user: Uuid, lastMessageSeq: number): Promise<CmdServed<CmdAckResult>>;
  pending(tenant: Uuid, user: Uuid, limit: BoundedLimit): Promise<CmdServed<PendingConversationView[]>>;
}

/** The owner of a slot as this node sees it; outside a cluster (ownership null) this node owns every slot. */
function slotOwnership(ownership: OwnershipView | null) {
  const owns = (slot: number) => ownership === null || (ownership.owns("slot", slot) && ownership.tokenOf("slot", slot) !== null);
  const notOwner = (slot: number) => `node ${ownership?.nodeId ?? "?"} does not own slot ${slot}`;
  return { owns, notOwner };
}

/** localCmdOps over this node's CMD module and its view of ownership (null outside a cluster). `slotOf` is core/cluster's slotOfUser. */
export function localCmdOps(cmdApi: () => CmdSyncApi, ownership: OwnershipView | null, slotOf: (tenant: Uuid, user: Uuid) => number): CmdLocalOps {
  const { owns, notOwner } = slotOwnership(ownership);
  const stale = async (slot: number, detail: string): Promise<CmdServed<never>> => ({
    status: NodeStatus.NODE_STATUS_STALE_OWNER, detail, slot,
    owner: ownership ? await ownership.ownerOf("slot", slot) : { kind: "slot", unit: slot, nodeId: null, address: null, token: 0, alive: false },
  });
  /** Runs `op` when this node owns the user's slot; STALE_OWNER when it does not, or when the engine found it no longer does. */
  const owned = async <T>(tenant: Uuid, user: Uuid, op: () => T | Promise<T>): Promise<CmdServed<T>> => {
    const slot = slotOf(tenant, user);
    if (!owns(slot)) return stale(slot, notOwner(slot));
    try {
      return { status: NodeStatus.NODE_STATUS_OK, detail: "", slot, result: await op() };
    } catch (err) {
      if (isStaleOwner(err)) return stale(slot, messageOf(err));
      throw err;
    }
  };
  return {
    sync: (tenant, user, limit, mode) => owned(tenant, user, () => cmdApi().syncLocal(tenant, user, limit, mode)),
    ack: (tenant, user, lastMessageSeq) => owned(tenant, user, () => cmdApi().ackLocal(tenant, user, lastMessageSeq)),
    pending: (tenant, user, limit) => owned(tenant, user, () => cmdApi().pendingLocal(tenant, user, limit)),
  };
}

/**
 * The CMD handlers of this node's node service: each request parsed (REJECTED when it does not
 * parse), served by localCmdOps, answered in the node wire types. `address`: this node's
 * node.listen as peers reach it.
 */
export function localCmdNode(cmdApi: () => CmdSyncApi, ownership: OwnershipView | null, slotOf: (tenant: Uuid, user: Uuid) => number, address: string): CmdNodeHandlers {
  const { owns, notOwner } = slotOwnership(ownership);
  const ops = localCmdOps(cmdApi, ownership, slotOf);
  const self = (slot: number): UnitOwner => ({
    kind: "slot", unit: slot, nodeId: ownership?.nodeId ?? "", address, token: BigInt(ownership?.tokenOf("slot", slot) ?? 0),
  });
  const ownerOf = async (slot: number): Promise<UnitOwner> => ownership ? ownerWire(await ownership.ownerOf("slot", slot)) : self(slot);
  /** The owner a served call names: this node when it answered OK, else the one it sees. */
  const ownerOfServed = (a: CmdServed<unknown>): UnitOwner => (a.status === NodeStatus.NODE_STATUS_OK ? self(a.slot) : ownerWire(a.owner));

  /** The user of a request, or the REJECTED detail. */
  function userOf(req: { tenant: string; user: string }): { tenant: Uuid; user: Uuid } | string {
    try {
      return { tenant: parseUuid(req.tenant, "tenant"), user: parseUuid(req.user, "user") };
    } catch (err) {
      return messageOf(err);
    }
  }

  return {
    async pushIntents(req) {
      const rejected = (detail: string): PushIntentsResponse => {
        cmdSurfaceMetrics.intentsReceived.inc({ status: "REJECTED" }, Math.max(1, req.intents.length));
        return { status: NodeStatus.NODE_STATUS_REJECTED, accepted: 0, dropped: 0, owners: [], detail };
      };
      if (req.intents.length === 0) return rejected("intents: name at least one intent");
      if (req.intents.length > MAX_PUSH_INTENTS) return rejected(`intents: at most ${MAX_PUSH_INTENTS} per call`);
      const intents: ConversationIntent[] = [];
      for (const [i, bytes] of req.intents.entries()) {
        try {
          // decodeIntent validates (and rejects non-canonical bytes)
          intents.push(decodeIntent(new Uint8Array(bytes)));
        } catch (err) {
          return rejected(`intents[${i}]: ${messageOf(err)}`);
        }
      }
      // all or nothing: every user of every intent must be ours before any is taken
      const slots = new Set<number>();
      for (const intent of intents) for (const user of intent.userReadSeqs.keys()) slots.add(slotOf(intent.tenant, user));
      const notMine = [...slots].filter((s) => !owns(s)).sort((a, b) => a - b);
      if (notMine.length > 0) {
        cmdSurfaceMetrics.intentsReceived.inc({ status: "STALE_OWNER" }, intents.length);
        return { status: NodeStatus.NODE_STATUS_STALE_OWNER, accepted: 0, dropped: 0, owners: await Promise.all(notMine.map(ownerOf)), detail: `${notOwner(notMine[0]!)}${notMine.length > 1 ? ` (nor ${notMine.length - 1} more)` : ""}` };
      }
      let accepted = 0;
      let dropped = 0;
      for (const intent of intents) {
        const r = cmdApi().acceptIntent(intent);
        if (r === "ok") accepted++;
        else if (r === "dropped") dropped++;
        else {
          // the slot moved between the check and the push: what was taken is harmless to take
          // again (monotonic merges), so the caller re-routes the whole request
          cmdSurfaceMetrics.intentsReceived.inc({ status: "STALE_OWNER" }, intents.length - accepted);
          const now = [...slots].filter((s) => !owns(s));
          return { status: NodeStatus.NODE_STATUS_STALE_OWNER, accepted, dropped, owners: await Promise.all(now.map(ownerOf)), detail: "the slot of a user moved while the intents were taken" };
        }
      }
      cmdSurfaceMetrics.intentsReceived.inc({ status: "OK" }, accepted);
      if (dropped > 0) cmdSurfaceMetrics.intentsReceived.inc({ status: "DROPPED" }, dropped);
      return { status: NodeStatus.NODE_STATUS_OK, accepted, dropped, owners: [], detail: dropped > 0 ? `${dropped} intent(s) dropped: the pending buffer is full` : "" };
    },

    async cmdSync(req) {
      const u = userOf(req);
      if (typeof u === "string") return { status: NodeStatus.NODE_STATUS_REJECTED, messages: [], generation: 0n, detail: u };
      const a = await ops.sync(u.tenant, u.user, cmdSyncLimit(req.limit), req.peek ? "peek" : "record");
      if (a.status !== NodeStatus.NODE_STATUS_OK) return { status: a.status, owner: ownerOfServed(a), messages: [], generation: 0n, detail: a.detail };
      return { status: a.status, owner: ownerOfServed(a), messages: a.result.messages.map(cmdMessageToWire), generation: BigInt(a.result.generation ?? 0), detail: "" };
    },

    async cmdAck(req) {
      const u = userOf(req);
      const none = { advanced: 0, cleared: 0, warning: "", generation: 0n };
      if (typeof u === "string") return { status: NodeStatus.NODE_STATUS_REJECTED, ...none, detail: u };
      if (req.lastMessageSeq === 0n) return { status: NodeStatus.NODE_STATUS_REJECTED, ...none, detail: "last_message_seq: must be at least 1" };
      const a = await ops.ack(u.tenant, u.user, Number(req.lastMessageSeq));
      if (a.status !== NodeStatus.NODE_STATUS_OK) return { status: a.status, owner: ownerOfServed(a), ...none, detail: a.detail };
      const r = a.result;
      return { status: a.status, owner: ownerOfServed(a), advanced: r.advanced, cleared: r.cleared, warning: r.warning ?? "", generation: BigInt(r.generation ?? 0), detail: "" };
    },

    async cmdPending(req) {
      const u = userOf(req);
      if (typeof u === "string") return { status: NodeStatus.NODE_STATUS_REJECTED, views: [], detail: u };
      const a = await ops.pending(u.tenant, u.user, cmdSyncLimit(req.limit));
      if (a.status !== NodeStatus.NODE_STATUS_OK) return { status: a.status, owner: ownerOfServed(a), views: [], detail: a.detail };
      return {
        status: a.status, owner: ownerOfServed(a), detail: "",
        views: a.result.map((v) => ({ channelId: v.channel.channelId, channelType: v.channel.channelType, lastMsgSeq: BigInt(v.lastMsgSeq), activeAt: BigInt(v.activeAt), readSeq: BigInt(v.readSeq) })),
      };
    },

    async cmdFlush() {
      const nodeId = ownership?.nodeId ?? "";
      try {
        const r = await cmdApi().flush();
        return { status: NodeStatus.NODE_STATUS_OK, nodeId, rows: r.rows, batches: r.batches, failedBatches: r.failedBatches, detail: "" };
      } catch (err) {
        return { status: NodeStatus.NODE_STATUS_REJECTED, nodeId, rows: 0, batches: 0, failedBatches: 1, detail: `flush failed: ${messageOf(err)}` };
      }
    },
  };
}
