/**
 * The CMD log's contract (spec 001, issue 13): command channels, the committed message, a send
 * request, and the reader the sync application loads messages through. A CMD channel is
 * (tenant, command channel id, channel type); every operation on a channel is keyed by both the
 * id and the type (spec 001: never by the id alone).
 */
import type { Uuid } from "../base/index.js";

/** spec 001: a command channel id is `<source>____cmd`. */
export const CMD_CHANNEL_SUFFIX = "____cmd";
/** WuKongIM's channel types the engine names; any 1 … 255 is accepted, 0 never. */
export const CHANNEL_TYPE_PERSON = 1;
export const CHANNEL_TYPE_GROUP = 2;

/** The channel of a CMD operation: `channelId` always carries the suffix (normaliseCommandChannel). */
export interface CommandChannelKey {
  channelId: string;
  channelType: number;
}

/** A CMD message as committed (durable: seq ≥ 1) or delivered only (NoPersist: seq 0). */
export interface CmdMessage {
  tenant: Uuid;
  channel: CommandChannelKey;
  /** The channel's own sequence, from 1; 0 for NoPersist. */
  messageSeq: number;
  /** UUIDv7 of the message. */
  messageId: Uuid;
  /** The caller's idempotency key (WuKongIM client_msg_no); a repeat answers the first commit. */
  clientMsgNo: string;
  /** The sender, or null for a system command (the app server sending as nobody). */
  from: Uuid | null;
  /** Commit time, ms since the epoch (Redis TIME inside the commit script). */
  timestampMs: number;
  /** header.red_dot / header.sync_once of the legacy message. */
  redDot: boolean;
  syncOnce: boolean;
  noPersist: boolean;
  payload: Uint8Array;
  /** The audience frozen at allocation: the explicit list, or the source group's active members then. */
  recipients: Uuid[];
}

/**
 * Reads a channel's durable CMD messages (the log): seq > afterSeq, ascending, at most limit. With
 * `forUser`, only the messages whose frozen recipients include that user: one channel carries
 * messages to different audiences (request-scoped sends; a group's members change), and a user
 * must never be answered a message it was not sent (a member added later starts at the next seq).
 */
export interface CmdMessageSource {
  load(tenant: Uuid, channel: CommandChannelKey, afterSeq: number, limit: number, forUser?: Uuid): Promise<CmdMessage[]>;
}

/** A CMD send (engine API, `qimctl cmd send`, gRPC CmdService.Send). */
export interface CmdSendRequest {
  tenant: Uuid;
  /** Normalised by adding the suffix once (`g1` → `g1____cmd`; `g1____cmd` stays). */
  channelId: string;
  channelType: number;
  /** null: a system command. */
  from: Uuid | null;
  /**
   * Request-scoped recipients; null: the source group's active members frozen at allocation
   * (channel type 2 and a source that is a group id of the tenant).
   */
  to: Uuid[] | null;
  noPersist: boolean;
  payload: Uint8Array;
  /** Idempotency key; generated when absent. */
  clientMsgNo?: string;
  redDot?: boolean;
  syncOnce?: boolean;
}
