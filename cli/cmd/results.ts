/** The JSON results of the `cmd` commands (docs/operator-guide.md "CMD sync", docs/cmd-sync.md); cli/result.ts says how they are declared. */
import type {
  CmdBadFile, CmdFlushResponse, CmdMessage, CmdOwnerResponse, CmdPendingResponse, CmdSendResponse, CmdStateResponse, CmdStatusResponse, CmdUserAckResponse, CmdUserSyncResponse,
} from "../../admin-api/client.js";
import { resultFrom, u64 } from "../result.js";

/** The user a command acts as or on, as the command named it. */
export interface CmdUser {
  tenant: string;
  user: string;
}

const CMD_USER = { tenant: "wire", user: "wire" } as const;

const utf8 = new TextDecoder("utf-8", { fatal: true });

/** The payload as text when it is valid UTF-8, else null. */
function utf8Text(payload: Uint8Array): string | null {
  try {
    return utf8.decode(payload);
  } catch {
    return null;
  }
}

export const cmdMessageResult = resultFrom<CmdMessage>()({
  /** As stored: with the ____cmd suffix. */
  channelId: "wire",
  channelType: "wire",
  /** 0 for a no-persist message. */
  messageSeq: "u64",
  messageId: "wire",
  clientMsgNo: "wire",
  /** null: a system command. */
  from: "text or null",
  timestampMs: "u64",
  redDot: "wire",
  syncOnce: "wire",
  noPersist: "wire",
  payloadBase64: (m) => Buffer.from(m.payload).toString("base64"),
  /** The payload as text when it is valid UTF-8, else null. */
  text: (m) => utf8Text(m.payload),
  recipients: "wire",
});
export type CmdMessageResult = ReturnType<typeof cmdMessageResult>;

export const cmdSendResult = resultFrom<CmdSendResponse & { tenant: string }>()({
  tenant: "wire",
  message: (r) => {
    if (!r.message) throw new Error("the server answered a send without its message");
    return cmdMessageResult(r.message);
  },
  duplicate: "wire",
  /** Every owner of a recipient took the intent at once (false: their catch-up scan derives it). */
  intentAccepted: "wire",
});
export type CmdSendResult = ReturnType<typeof cmdSendResult>;

/** `recorded` false: the sync was a peek (the server answers generation 0, nothing recorded). */
export const cmdSyncResult = resultFrom<CmdUserSyncResponse & CmdUser & { recorded: boolean }>()({
  ...CMD_USER,
  messages: (r) => r.messages.map(cmdMessageResult),
  /** The generation this sync recorded (`cmd ack` applies the latest one); null: a peek, nothing recorded. */
  generation: (r) => (r.recorded ? u64(r.generation) : null),
  /** The node that served it (the owner of the user's slot); null outside a cluster. */
  servedBy: "text or null",
});
export type CmdSyncResult = ReturnType<typeof cmdSyncResult>;

export const cmdAckResult = resultFrom<CmdUserAckResponse & CmdUser>()({
  ...CMD_USER,
  /**
   * The sync generation the ack applied (spec 001: the user's latest; each channel that sync
   * answered is read up to what it answered — `--last-seq` bounds nothing); null: there was no
   * sync to apply.
   */
  generation: (r) => (r.generation === 0n ? null : u64(r.generation)),
  /** Durable rows advanced or created. */
  advanced: "wire",
  /** Pending entries cleared. */
  cleared: "wire",
  /** A clean-up failure after the durable write (the ack still succeeded), else null. */
  warning: "text or null",
  servedBy: "text or null",
});
export type CmdAckResult = ReturnType<typeof cmdAckResult>;

const cmdPendingEntryResult = resultFrom<CmdPendingResponse["entries"][number]>()({
  channelId: "wire",
  channelType: "wire",
  lastMsgSeq: "u64",
  activeAtMs: "u64",
  readSeq: "u64",
});

export const cmdPendingResult = resultFrom<CmdPendingResponse & CmdUser>()({
  ...CMD_USER,
  servedBy: "text or null",
  entries: (r) => r.entries.map(cmdPendingEntryResult),
});
export type CmdPendingResult = ReturnType<typeof cmdPendingResult>;

const cmdStateRowResult = resultFrom<CmdStateResponse["rows"][number]>()({
  channelId: "wire",
  channelType: "wire",
  readSeq: "u64",
  deletedToSeq: "u64",
  activeAtMs: "u64",
  updatedAtMs: "u64",
});

export const cmdStateResult = resultFrom<CmdStateResponse & CmdUser>()({
  ...CMD_USER,
  rows: (r) => r.rows.map(cmdStateRowResult),
});
export type CmdStateResult = ReturnType<typeof cmdStateResult>;

export const cmdOwnerResult = resultFrom<CmdOwnerResponse & CmdUser>()({
  ...CMD_USER,
  slot: "wire",
  /** null: no live owner right now, or the server is not a cluster node. */
  nodeId: "text or null",
  address: "text or null",
  token: "u64",
  alive: "wire",
  /** false: the server is not a node of an engine cluster and serves every user itself. */
  clustered: "wire",
});
export type CmdOwnerResult = ReturnType<typeof cmdOwnerResult>;

export const cmdFlushResult = resultFrom<CmdFlushResponse>()({
  /** The node whose buffer was flushed (empty outside a cluster). */
  nodeId: "wire",
  rows: "wire",
  batches: "wire",
  failedBatches: "wire",
});
export type CmdFlushResult = ReturnType<typeof cmdFlushResult>;

/** A CMD pending file set aside as .bad (docs/cmd-sync.md ".bad"). */
export const cmdBadFileResult = resultFrom<CmdBadFile>()({
  /** null: the server is not a cluster node. */
  nodeId: "text or null",
  path: "wire",
  /** When the node renamed it, RFC 3339; null when the node did not record it. */
  setAsideAt: (b) => (b.setAsideAtMs > 0n ? new Date(Number(b.setAsideAtMs)).toISOString() : null),
});
export type CmdBadFileResult = ReturnType<typeof cmdBadFileResult>;

export const cmdStatusResult = resultFrom<CmdStatusResponse>()({
  /** The answering node; null: the server is not a cluster node. */
  answeredBy: "text or null",
  /** Entries in the answering server's pending buffer, not yet flushed. */
  pendingEntries: "wire",
  /** The answering server's .bad file while it is on disk, then every other node's recorded one. */
  badFiles: (r) => r.badFiles.map(cmdBadFileResult),
});
export type CmdStatusResult = ReturnType<typeof cmdStatusResult>;
