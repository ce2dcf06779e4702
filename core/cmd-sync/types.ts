/**
 * The CMD conversation sync (spec 001, issue 13): the contract between its parts, written before
 * them so that the log, the pending buffer, the durable state, the sync/ack application and the
 * surfaces (node RPC, HTTP, gRPC, CLI) are built against one set of types.
 *
 * Identities: a user is (tenant, user UUID) as everywhere in the engine; a CMD channel is
 * (tenant, command channel id, channel type). Every operation on a channel is keyed by both the
 * id and the type (spec 001: never by the id alone).
 */
import type { Fence } from "../cluster/index.js";
import type { Uuid } from "../base/index.js";
import type { CmdMessage, CmdSendRequest, CommandChannelKey } from "../cmd-log/index.js";

/**
 * One CMD conversation update before it is flushed (spec 001 ConversationIntent): the seq and
 * time of a message and the read seq each recipient starts from (the sender its own seq, every
 * other recipient 0).
 */
export interface ConversationIntent {
  tenant: Uuid;
  channel: CommandChannelKey;
  messageSeq: number;
  activeAt: number;
  /** user UUID → read seq; never empty, never a blank key, no value above messageSeq. */
  userReadSeqs: Map<Uuid, number>;
}

/** What sync overlays for one user and channel (spec 001 PendingConversationView). */
export interface PendingConversationView {
  channel: CommandChannelKey;
  /** The last seq that concerned this user (per-user, not the channel-wide maximum). */
  lastMsgSeq: number;
  /** The active time that concerned this user. */
  activeAt: number;
  readSeq: number;
}

/** Durable CMD conversation state per (tenant, user, channel) (spec 001 CMDConversationState). */
export interface CmdConversationState {
  tenant: Uuid;
  user: Uuid;
  channel: CommandChannelKey;
  readSeq: number;
  deletedToSeq: number;
  activeAt: number;
  updatedAt: number;
  /**
   * The last seq that concerned this user on the channel (the pending entry's per-user last seq,
   * max-merged at each flush). The row is unread while it is beyond max(readSeq, deletedToSeq)
   * (isUnreadState). null on a row written before it was kept (issue 23, the upgrade): unknown,
   * so the row counts as unread until a sync has loaded its commands to the end of the CMD log and
   * settled it (CmdReadPatch.lastMsgSeq). A write always carries a number.
   */
  lastMsgSeq: number | null;
}

/** A read advance for an existing row (spec 001 CMDConversationReadPatch): monotonic. */
export interface CmdReadPatch {
  tenant: Uuid;
  user: Uuid;
  channel: CommandChannelKey;
  readSeq: number;
  /**
   * What a sync found of a row whose last seq is unknown (null): the end of the user's commands in
   * the CMD log (its last answered seq, or its read seq when there was nothing to load). Max-merged
   * into the row's last seq, the unknown one taken as none, so the row settles (issue 23, the
   * upgrade path; docs/cmd-sync-core.md).
   */
  lastMsgSeq?: number;
}

/**
 * Durable state (spec 001 StateStore). Every write is a monotonic max merge (read seq, active at)
 * so that a replayed or repeated write never moves anything back, and carries the fence of the
 * user's slot: refused (FencedError) when the slot's lease names someone else. A batch holds the
 * rows of one slot only: on Redis it is all or nothing (one Lua call on the slot's `{uNNN}` tag);
 * on Cassandra all or nothing per user, not across the users of the batch (docs/cmd-sync-core.md:
 * why that is safe — a failed batch is re-applied whole, and what was written is a no-op then).
 */
export interface CmdStateStore {
  /** Where the rows live: "redis" (the user slot's tag) or "cassandra" (the authority's keyspace). */
  readonly kind?: "redis" | "cassandra";
  /**
   * How many slots' batches a flush of the pending buffer writes at once (each slot's in order).
   * Absent: 1, one slot after another (Redis: each batch is one Lua call on one instance already).
   */
  readonly flushConcurrency?: number;
  /** Connects and creates what it needs (Cassandra's tables); CmdSync.start() calls it. */
  init?(): Promise<void>;
  /** Releases its connections; CmdSync.stop() calls it. */
  close?(): Promise<void>;
  /** The user's rows in (activeAt DESC, type, id) order, the newest `limit`, read or not (display: `qimctl cmd state`). */
  listActive(tenant: Uuid, user: Uuid, limit: number): Promise<CmdConversationState[]>;
  /**
   * The user's unread rows (isUnreadState) in (activeAt DESC, type, id) order, at most `limit`:
   * what a sync reads, so that read rows never crowd an unread one out of its scan (issue 23).
   */
  listUnread(tenant: Uuid, user: Uuid, limit: number): Promise<CmdConversationState[]>;
  /** The user's rows of these channels (absent ones left out), read in chunks of CMD_STATE_READ_CHUNK. */
  getMany(tenant: Uuid, user: Uuid, channels: readonly CommandChannelKey[]): Promise<CmdConversationState[]>;
  get(tenant: Uuid, user: Uuid, channel: CommandChannelKey): Promise<CmdConversationState | null>;
  /**
   * Makes the user's rows of the old code (last seq null) visible to listUnread, once per user, in
   * bounded fenced steps (Redis: the cmdunread index; a store whose listUnread filters rows needs
   * none). The sync calls it before listUnread.
   */
  indexLegacyRows?(tenant: Uuid, user: Uuid, fence: Fence): Promise<void>;
  /**
   * Advances read seq of rows that exist (and settles an unknown last seq, CmdReadPatch.lastMsgSeq);
   * a patch for a missing row is a no-op. updatedAt: the ack's time (default now).
   */
  advanceReadSeqs(patches: readonly CmdReadPatch[], fence: Fence, updatedAt?: number): Promise<void>;
  /** Creates or max-merges rows. */
  upsertStates(states: readonly CmdConversationState[], fence: Fence): Promise<void>;
}

/** The owner-local pending buffer (spec 001 ConversationUpdater). */
export interface CmdPendingBuffer {
  /** Coalesces an intent whose users this node owns; false when the queue is full (dropped, counted). */
  pushIntent(intent: ConversationIntent): boolean;
  /** The user's pending channels in (activeAt DESC, type, id) order, at most limit; with unreadOnly, only those whose last seq is beyond their read seq. */
  listPending(tenant: Uuid, user: Uuid, limit: number, unreadOnly?: boolean): PendingConversationView[];
  /** The user's pending view of one channel, null when none. */
  pendingView(tenant: Uuid, user: Uuid, channel: CommandChannelKey): PendingConversationView | null;
  /** Removes the user from the channel's pending update when throughSeq ≥ its last seq for the user. */
  markSynced(tenant: Uuid, user: Uuid, channel: CommandChannelKey, throughSeq: number): void;
  /** One bounded flush of what is pending; rejects with the first failed batch's error (that batch stays). */
  flush(): Promise<CmdFlushReport>;
}

export interface CmdFlushReport {
  rows: number;
  batches: number;
  failedBatches: number;
}

/**
 * Where an intent goes: grouped by the owner of each user's slot, the local group to the local
 * buffer, the others over node RPC (admin-api/node), stale owner → re-resolve, retry once.
 * Resolves true only when every group was accepted; never rejects (a failed side effect is
 * logged and counted; the owner's recovery scan re-derives it).
 */
export interface CmdIntentRouter {
  pushIntent(intent: ConversationIntent): Promise<boolean>;
}

/** One channel's record of a sync answer, kept per user for the ack (spec 001 sync records). */
export interface CmdSyncRecord {
  channel: CommandChannelKey;
  /** The last message seq this sync returned on the channel. */
  lastReturnedMsgSeq: number;
}

/**
 * "record": the sync of the user's application (HTTP /message/sync): its answer becomes the
 * user's latest generation, which the next ack applies. "peek": an operator's look — the same
 * answer, nothing recorded, so it never changes what another caller's ack applies (issue 24).
 */
export type CmdSyncMode = "record" | "peek";

export interface CmdSyncResult {
  messages: CmdMessage[];
  /** The generation this sync recorded (an ack applies only the latest one); null for a peek. */
  generation: number | null;
}

export interface CmdAckResult {
  /** The sync generation this ack applied; null when the user had none (nothing applied). */
  generation: number | null;
  /** Durable rows advanced or created. */
  advanced: number;
  /** Pending entries cleared (best effort). */
  cleared: number;
  /** A clean-up failure after a durable write (a warning, the ack still succeeded). */
  warning: string | null;
}

export interface CmdSendResult {
  message: CmdMessage;
  /** This clientMsgNo was committed before: the first commit's message, nothing written. */
  duplicate: boolean;
  /** Every owner group of the intent accepted it (false: the owners' catch-up scan derives it). */
  intentAccepted: boolean;
}

/**
 * What the surfaces (admin-api: node RPC, HTTP /message/sync, gRPC CmdService, CLI) use of the CMD
 * sync module on one node. The *Local operations serve users whose slot this node owns and throw
 * StaleOwner (core/cmd-sync errors) otherwise: the surfaces route to the owner first.
 */
export interface CmdSyncApi {
  send(req: CmdSendRequest): Promise<CmdSendResult>;
  ownsUser(tenant: Uuid, user: Uuid): boolean;
  /** Receiver side of a routed intent: all or nothing — "stale_owner" when any user's slot is not ours. */
  acceptIntent(intent: ConversationIntent): "ok" | "stale_owner" | "dropped";
  syncLocal(tenant: Uuid, user: Uuid, limit: number, mode?: CmdSyncMode): Promise<CmdSyncResult>;
  ackLocal(tenant: Uuid, user: Uuid, lastMessageSeq: number): Promise<CmdAckResult>;
  pendingLocal(tenant: Uuid, user: Uuid, limit: number): PendingConversationView[];
  stateOf(tenant: Uuid, user: Uuid, limit: number): Promise<CmdConversationState[]>;
  flush(): Promise<CmdFlushReport>;
  /** Installs the node-RPC router (admin-api/node); the default pushes to the local buffer only. */
  setRouter(router: CmdIntentRouter): void;
  /** The pending file renamed `.bad` at start-up, null when none. */
  readonly badFile: string | null;
  /** (user, CMD channel) entries in this node's pending buffer, not yet flushed. */
  pendingEntries(): number;
  /** That file and when it was set aside, while it is still on disk (null once deleted). */
  badPendingFile(): CmdBadPendingFile | null;
}

/** A pending file that did not decode at start-up, renamed `<file>.bad` (spec 001). */
export interface CmdBadPendingFile {
  /** The `.bad` file's absolute path. */
  readonly path: string;
  /** When this node renamed it (ms since 1970). */
  readonly setAsideAtMs: number;
}
