import {
  CHANNEL_TYPE_GROUP,
  cmdOwnerOf,
  cmdSyncLimit,
  InvalidArgumentError,
  parseChannelType,
  parseCommandChannelId,
  parseUuid,
  type CmdMessage,
} from "../../../../core/index.js";
import { catalogEntry } from "../../../../admin-api/catalog.js";
import type { CmdMessage as CmdMessageOut } from "../../../../admin-api/gen/qim/admin/v1/cmd.js";
import { cmdBadFiles } from "../../../routing/cmd-bad.js";
import { userOf } from "../../../routing/cmd-router.js";
import { ALL_ROLES, defineService, MUTATE, unary } from "../../../pipeline/rpc.js";
import type { Role } from "../../../pipeline/auth.js";

/**
 * Who may act on CMD traffic: send a system command, and sync or ack as a user (both move state:
 * a sync records the generation an ack applies, an ack advances the durable read seqs). The drill
 * role sends messages as a user elsewhere (MessageService.SendMessage), so it may here too.
 */
const CMD_ACT: readonly Role[] = ["admin", "operator", "drill"];

export function cmdMessageOut(m: CmdMessage): CmdMessageOut {
  return {
    channelId: m.channel.channelId, channelType: m.channel.channelType, messageSeq: BigInt(m.messageSeq), messageId: m.messageId,
    clientMsgNo: m.clientMsgNo, from: m.from ?? "", timestampMs: BigInt(m.timestampMs), redDot: m.redDot, syncOnce: m.syncOnce,
    noPersist: m.noPersist, payload: Buffer.from(m.payload), recipients: [...m.recipients],
  };
}

/** CmdService: CMD conversation sync for operators (spec 001, issue 13; docs/cmd-sync.md). */
export const cmdService = defineService(catalogEntry("qim.admin.v1.CmdService"), {
  send: unary({
    roles: CMD_ACT, mutates: true,
    async handle(req, { deps }) {
      const tenant = parseUuid(req.tenant, "tenant");
      const channelType = parseChannelType(req.channelType === 0 ? CHANNEL_TYPE_GROUP : req.channelType, "channel_type");
      const channelId = parseCommandChannelId(req.channelId, "channel_id");
      const from = req.from === "" ? null : parseUuid(req.from, "from");
      const to = req.to.length === 0 ? null : req.to.map((u, i) => parseUuid(u, `to[${i}]`));
      if (req.payload.length === 0) throw new InvalidArgumentError("payload", "a CMD message needs a payload (qimctl cmd send --text or --payload-base64)");
      const r = await deps.cmd().api.send({
        tenant, channelId, channelType, from, to, noPersist: req.noPersist, payload: new Uint8Array(req.payload),
        ...(req.clientMsgNo ? { clientMsgNo: req.clientMsgNo } : {}), redDot: req.redDot, syncOnce: req.syncOnce,
      });
      const m = r.message;
      const what = m.noPersist ? "delivered (no_persist: not stored)" : `${r.duplicate ? "duplicate of" : "committed"} seq ${m.messageSeq}`;
      return {
        response: { message: cmdMessageOut(m), duplicate: r.duplicate, intentAccepted: r.intentAccepted },
        detail: `${m.channel.channelId}/${m.channel.channelType} ${what} to ${m.recipients.length} recipient(s)${m.noPersist || r.intentAccepted ? "" : "; an owner did not take the intent (its catch-up scan will)"}`,
      };
    },
  }),
  sync: unary({
    roles: CMD_ACT, mutates: true,
    async handle(req, { deps }) {
      const { tenant, user } = userOf(req.tenant, req.user);
      const r = await deps.cmd().sync(tenant, user, cmdSyncLimit(req.limit), req.peek ? "peek" : "record");
      return {
        response: { messages: r.messages.map(cmdMessageOut), generation: BigInt(r.generation ?? 0), servedBy: r.servedBy },
        detail: `${r.messages.length} message(s), ${r.generation === null ? "a peek (no generation recorded)" : `generation ${r.generation}`}${r.servedBy ? ` at node ${r.servedBy}` : ""}`,
      };
    },
  }),
  ack: unary({
    roles: CMD_ACT, mutates: true,
    async handle(req, { deps }) {
      const { tenant, user } = userOf(req.tenant, req.user);
      if (req.lastMessageSeq < 1n) throw new InvalidArgumentError("last_message_seq", "last_message_seq must be at least 1 (the last message seq the sync returned)");
      if (req.lastMessageSeq > BigInt(Number.MAX_SAFE_INTEGER)) throw new InvalidArgumentError("last_message_seq", "last_message_seq is beyond any sequence");
      const r = await deps.cmd().ack(tenant, user, Number(req.lastMessageSeq));
      return {
        response: { advanced: r.advanced, cleared: r.cleared, warning: r.warning ?? "", servedBy: r.servedBy, generation: BigInt(r.generation ?? 0) },
        detail: `${r.generation === null ? "no sync to apply" : `generation ${r.generation}`}: ${r.advanced} row(s) advanced, ${r.cleared} pending cleared${r.warning ? `; warning: ${r.warning}` : ""}`,
      };
    },
  }),
  getPending: unary({
    roles: ALL_ROLES, mutates: false,
    async handle(req, { deps }) {
      const { tenant, user } = userOf(req.tenant, req.user);
      const r = await deps.cmd().pending(tenant, user, cmdSyncLimit(req.limit));
      return {
        response: {
          servedBy: r.servedBy,
          entries: r.views.map((v) => ({ channelId: v.channel.channelId, channelType: v.channel.channelType, lastMsgSeq: BigInt(v.lastMsgSeq), activeAtMs: BigInt(v.activeAt), readSeq: BigInt(v.readSeq) })),
        },
      };
    },
  }),
  getState: unary({
    roles: ALL_ROLES, mutates: false,
    async handle(req, { deps }) {
      const { tenant, user } = userOf(req.tenant, req.user);
      const rows = await deps.cmd().api.stateOf(tenant, user, cmdSyncLimit(req.limit));
      return {
        response: {
          rows: rows.map((r) => ({
            channelId: r.channel.channelId, channelType: r.channel.channelType, readSeq: BigInt(r.readSeq), deletedToSeq: BigInt(r.deletedToSeq),
            activeAtMs: BigInt(r.activeAt), updatedAtMs: BigInt(r.updatedAt),
          })),
        },
      };
    },
  }),
  getOwner: unary({
    roles: ALL_ROLES, mutates: false,
    async handle(req, { deps }) {
      const { tenant, user } = userOf(req.tenant, req.user);
      const o = await cmdOwnerOf(deps.runtime.cluster, tenant, user);
      return { response: { slot: o.slot, nodeId: o.nodeId, address: o.address, token: BigInt(o.token), alive: o.alive, clustered: o.clustered } };
    },
  }),
  getStatus: unary({
    roles: ALL_ROLES, mutates: false,
    async handle(_req, { deps }) {
      const api = deps.cmd().api;
      return { response: { answeredBy: deps.runtime.cluster?.nodeId ?? "", pendingEntries: api.pendingEntries(), badFiles: await cmdBadFiles(deps.runtime) } };
    },
  }),
  flush: unary({
    roles: MUTATE, mutates: true,
    async handle(req, { deps }) {
      const target = req.nodeId.trim();
      if (target !== "" && !/^[A-Za-z0-9._-]{1,64}$/.test(target)) throw new InvalidArgumentError("node_id", `not a node id: ${JSON.stringify(target.slice(0, 70))} (qimctl cluster nodes lists them)`);
      const r = await deps.cmd().flush(target === "" ? null : target);
      return {
        response: { nodeId: r.nodeId, rows: r.rows, batches: r.batches, failedBatches: r.failedBatches },
        detail: `node ${r.nodeId || "(this server)"}: ${r.rows} row(s) in ${r.batches} batch(es), ${r.failedBatches} failed`,
      };
    },
  }),
});
