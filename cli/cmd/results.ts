/** The JSON results of the `cmd` commands (docs/operator-guide.md "CMD sync", docs/cmd-sync.md). */
import type {
  CmdBadFile, CmdFlushResponse, CmdMessage, CmdOwnerResponse, CmdPendingResponse, CmdSendResponse, CmdStateResponse, CmdStatusResponse, CmdUserAckResponse, CmdUserSyncResponse,
} from "../../admin-api/client.js";
import { nonEmpty, u64 } from "../format.js";

export interface CmdUser {
  tenant: string;
  user: string;
}

export interface CmdMessageResult {
  /** As stored: with the ____cmd suffix. */
  channelId: string;
  channelType: number;
  /** 0 for a no-persist message. */
  messageSeq: number;
  messageId: string;
  clientMsgNo: string;
  /** null: a system command. */
  from: string | null;
  timestampMs: number;
  redDot: boolean;
  syncOnce: boolean;
  noPersist: boolean;
  payloadBase64: string;
  /** The payload as text when it is valid UTF-8, else null. */
  text: string | null;
  recipients: string[];
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

export function cmdMessageResult(m: CmdMessage): CmdMessageResult {
  let text: string | null;
  try {
    text = utf8.decode(m.payload);
  } catch {
    text = null;
  }
  return {
    channelId: m.channelId, channelType: m.channelType, messageSeq: u64(m.messageSeq), messageId: m.messageId, clientMsgNo: m.clientMsgNo,
    from: nonEmpty(m.from), timestampMs: u64(m.timestampMs), redDot: m.redDot, syncOnce: m.syncOnce, noPersist: m.noPersist,
    payloadBase64: Buffer.from(m.payload).toString("base64"), text, recipients: [...m.recipients],
  };
}

export interface CmdSendResult {
  tenant: string;
  message: CmdMessageResult;
  duplicate: boolean;
  /** Every owner of a recipient took the intent at once (false: their catch-up scan derives it). */
  intentAccepted: boolean;
}

export function cmdSendResult(tenant: string, r: CmdSendResponse): CmdSendResult {
  if (!r.message) throw new Error("the server answered a send without its message");
  return { tenant, message: cmdMessageResult(r.message), duplicate: r.duplicate, intentAccepted: r.intentAccepted };
}

export interface CmdSyncResult extends CmdUser {
  messages: CmdMessageResult[];
  /** The generation this sync recorded (`cmd ack` applies the latest one); null: a peek, nothing recorded. */
  generation: number | null;
  /** The node that served it (the owner of the user's slot); null outside a cluster. */
  servedBy: string | null;
}

/** `recorded` false: the sync was a peek (the server answers generation 0, nothing recorded). */
export function cmdSyncResult(who: CmdUser, r: CmdUserSyncResponse, recorded = true): CmdSyncResult {
  return { ...who, messages: r.messages.map(cmdMessageResult), generation: recorded ? u64(r.generation) : null, servedBy: nonEmpty(r.servedBy) };
}

export interface CmdAckResult extends CmdUser {
  /**
   * The sync generation the ack applied (spec 001: the user's latest; each channel that sync
   * answered is read up to what it answered — `--last-seq` bounds nothing); null: there was no
   * sync to apply.
   */
  generation: number | null;
  /** Durable rows advanced or created. */
  advanced: number;
  /** Pending entries cleared. */
  cleared: number;
  /** A clean-up failure after the durable write (the ack still succeeded), else null. */
  warning: string | null;
  servedBy: string | null;
}

export function cmdAckResult(who: CmdUser, r: CmdUserAckResponse): CmdAckResult {
  return { ...who, generation: r.generation === 0n ? null : u64(r.generation), advanced: r.advanced, cleared: r.cleared, warning: nonEmpty(r.warning), servedBy: nonEmpty(r.servedBy) };
}

export interface CmdPendingEntryResult {
  channelId: string;
  channelType: number;
  lastMsgSeq: number;
  activeAtMs: number;
  readSeq: number;
}

export interface CmdPendingResult extends CmdUser {
  entries: CmdPendingEntryResult[];
  servedBy: string | null;
}

export function cmdPendingResult(who: CmdUser, r: CmdPendingResponse): CmdPendingResult {
  return {
    ...who, servedBy: nonEmpty(r.servedBy),
    entries: r.entries.map((e) => ({ channelId: e.channelId, channelType: e.channelType, lastMsgSeq: u64(e.lastMsgSeq), activeAtMs: u64(e.activeAtMs), readSeq: u64(e.readSeq) })),
  };
}

export interface CmdStateRowResult {
  channelId: string;
  channelType: number;
  readSeq: number;
  deletedToSeq: number;
  activeAtMs: number;
  updatedAtMs: number;
}

export interface CmdStateResult extends CmdUser {
  rows: CmdStateRowResult[];
}

export function cmdStateResult(who: CmdUser, r: CmdStateResponse): CmdStateResult {
  return {
    ...who,
    rows: r.rows.map((x) => ({ channelId: x.channelId, channelType: x.channelType, readSeq: u64(x.readSeq), deletedToSeq: u64(x.deletedToSeq), activeAtMs: u64(x.activeAtMs), updatedAtMs: u64(x.updatedAtMs) })),
  };
}

export interface CmdOwnerResult extends CmdUser {
  slot: number;
  /** null: no live owner right now, or the server is not a cluster node. */
  nodeId: string | null;
  address: string | null;
  token: number;
  alive: boolean;
  /** false: the server is not a node of an engine cluster and serves every user itself. */
  clustered: boolean;
}

export function cmdOwnerResult(who: CmdUser, r: CmdOwnerResponse): CmdOwnerResult {
  return { ...who, slot: r.slot, nodeId: nonEmpty(r.nodeId), address: nonEmpty(r.address), token: u64(r.token), alive: r.alive, clustered: r.clustered };
}

export interface CmdFlushResult {
  /** The node whose buffer was flushed (empty outside a cluster). */
  nodeId: string;
  rows: number;
  batches: number;
  failedBatches: number;
}

export function cmdFlushResult(r: CmdFlushResponse): CmdFlushResult {
  return { nodeId: r.nodeId, rows: r.rows, batches: r.batches, failedBatches: r.failedBatches };
}

/** A CMD pending file set aside as .bad (docs/cmd-sync.md ".bad"). */
export interface CmdBadFileResult {
  /** null: the server is not a cluster node. */
  nodeId: string | null;
  path: string;
  /** When the node renamed it, RFC 3339; null when the node did not record it. */
  setAsideAt: string | null;
}

export function cmdBadFileResult(b: CmdBadFile): CmdBadFileResult {
  return { nodeId: nonEmpty(b.nodeId), path: b.path, setAsideAt: b.setAsideAtMs > 0n ? new Date(Number(b.setAsideAtMs)).toISOString() : null };
}

export interface CmdStatusResult {
  /** The answering node; null: the server is not a cluster node. */
  answeredBy: string | null;
  /** Entries in the answering server's pending buffer, not yet flushed. */
  pendingEntries: number;
  /** The answering server's .bad file while it is on disk, then every other node's recorded one. */
  badFiles: CmdBadFileResult[];
}

export function cmdStatusResult(r: CmdStatusResponse): CmdStatusResult {
  return { answeredBy: nonEmpty(r.answeredBy), pendingEntries: r.pendingEntries, badFiles: r.badFiles.map(cmdBadFileResult) };
}
