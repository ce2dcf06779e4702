/**
 * Per-call limits that a caller must know to stay within them (docs/architecture.md "Per-call
 * limits"). Here, in base, because the CLI splits its bulk changes by them and may import only
 * base (test/layout/imports.test.ts): the engine's defaults and the CLI read the one value.
 */
import { InvalidArgumentError } from "../errors/index.js";

/** The most distinct users one add/remove call may name (ChangeMembersRequest.users). */
export const MAX_USERS_PER_MEMBERSHIP_CALL = 1000;

/**
 * The most members or recipients one Redis call the engine issues may read or write (issue 22).
 * Redis runs one script or command at a time: at about 1 µs per member, a call within this budget
 * stays near a millisecond, so PINGs, heartbeats, lease renewals and small groups' calls wait at
 * most about that long behind it, whatever the size of a group (an HGETALL of a 1,000,000-member
 * group blocked Redis for 3.1 s and the node lost its leases). Work over a bigger audience is cut
 * into calls of this size that resume where the last one stopped.
 */
export const REDIS_CALL_MEMBER_BUDGET = 1000;

/**
 * The most recipients one dispatch record carries: a bigger audience is dispatched as several
 * records of the same seq (chunks 0, 1, 2 …), each written by one call within the budget and
 * projected by consumers within it too (a 1,000,000-member audience in one record was a 32 MB
 * stream entry, read and projected as a whole).
 */
export const FANOUT_CHUNK_RECIPIENTS = REDIS_CALL_MEMBER_BUDGET;

/**
 * The default of groups.max_members, the most current (ACTIVE) members a group may have: issue 22
 * asks that 1,000,000 work (member reads page, fanout runs in budgeted chunks) and that the limit
 * be stated, so a group cannot grow past what was measured.
 */
export const DEFAULT_MAX_GROUP_MEMBERS = 1_000_000;

/**
 * unread_precise_limit (spec 002 §3.3): beyond it a conversation's unread is this many and
 * unread_exact false; the definitional count reads at most this many entries per conversation,
 * for the conversation service's summaries and the conversation list's rows alike.
 */
export const UNREAD_PRECISE_LIMIT = 200;

// ---- Pages: what one call returns at most (the engine refuses more; the CLI checks before calling).

/**
 * session_list_page_limit (spec 002 §6, the session list): the most conversations one page of a
 * user's list returns, from the session projection (ListConversationSummaries) and from the
 * session view's snapshot (ListSessions) alike. Each row costs a pipelined read of its head and
 * unread count, so the page's cost is bounded by it.
 */
export const SESSION_PAGE_LIMIT = 200;
/** The page size when the caller names none (the session projection's and the session view's). */
export const SESSION_PAGE_DEFAULT = 50;

/** ReadHistoryRequest.limit: history records per page, at most (one bounded script per page) … */
export const HISTORY_PAGE_LIMIT = 1000;
/** … and when the caller names none. */
export const HISTORY_PAGE_DEFAULT = 100;
/** ListGroupsRequest.limit: the page size aimed at, at most (one bounded SCAN per Redis node and page) … */
export const GROUP_PAGE_LIMIT = 1000;
/** … and when the caller names none. */
export const GROUP_PAGE_DEFAULT = 100;

/**
 * /message/sync's limit (spec 001, the sync of CMD conversations): messages one sync returns when
 * the caller sends 0 or none (WuKongIM's default) …
 */
export const CMD_SYNC_DEFAULT_LIMIT = 200;
/** … and at most (a larger one is cut to it): the answer carries the messages' payloads, one node RPC answer. */
export const CMD_SYNC_MAX_LIMIT = 10_000;

/** ListConversationSummaries: the most groups one call names (one pipelined read per group). */
export const SUMMARY_GROUPS_MAX = 100;
/** GetEpoch: epoch bumps listed per call, by default and at most (the epoch log keeps its last 100). */
export const EPOCH_HISTORY_LIMIT = { default: 10, max: 100 } as const;
/** TailAudit: audit records per call, by default and at most (read backwards from the file's end). */
export const TAIL_AUDIT_LIMIT = { default: 50, max: 1000 } as const;
/** RunRebuildDrill: users named or sampled per drill (each rebuilt from the authority and compared). */
export const MAX_DRILL_USERS = 10_000;

// ---- Payloads and audiences.

/** A message's payload, at most (the conversation service's maxPayloadBytes default): it is stored in the history entry. */
export const MESSAGE_MAX_PAYLOAD_BYTES = 64 * 1024;
/** The most distinct users one message may mention (spec 002 §3.2 mention_count; bounds the history entry). */
export const MAX_MENTIONS = 100;
/** CreateGroupRequest.members: the most members a group is created with (the conversation service's maxInitialMembers default). */
export const MAX_INITIAL_MEMBERS = 10_000;
/** recall_self_window (spec 003 §2.4): how long after sending its author may recall a message. Moderation has no window. */
export const RECALL_SELF_WINDOW_MS = 2 * 60 * 1000;
/** edit_self_window (spec 003 §2.4): how long after sending its author may edit a message. */
export const EDIT_SELF_WINDOW_MS = 15 * 60 * 1000;
/** A moderation recall's or edit's reason (audited), at most (characters). */
export const MODERATION_REASON_MAX_CHARS = 500;
/** max_custom_payload_bytes (spec 003 §3): a custom message type's max_payload_bytes is at most this. */
export const MAX_CUSTOM_PAYLOAD_BYTES = 32 * 1024;
/**
 * per_user_reaction_rate (spec 003 §4.1): REACTs per second one user may make through one node's
 * gateway, all of the user's devices there together, counted apart from per_user_msg_rate. Past it
 * RATE_LIMITED with retry_after_ms, nothing written.
 */
export const PER_USER_REACTION_RATE = 5;
/** A user's REACT bucket holds this many seconds of per_user_reaction_rate. */
export const PER_USER_REACTION_BURST_SECONDS = 2;
/** reaction_detail_max_members (spec 003 §4.1): detail rows (who, when) are kept only while the conversation has at most this many members. */
export const REACTION_DETAIL_MAX_MEMBERS = 1000;
/** reaction_detail_max_per_message (spec 003 §4.1): and only while the message has fewer detail rows than this; past either, only the summary counts. */
export const REACTION_DETAIL_MAX_PER_MESSAGE = 10_000;
/**
 * reaction_push_merge_window (spec 003 §4.2): a connection gets at most one REACTION_UPDATE per
 * message in this window; the updates inside it are merged (absolute counts: the last one wins).
 */
export const REACTION_PUSH_MERGE_WINDOW_MS = 2000;
/** rtc_ring_timeout (spec 003 §5): an INVITE rings this long; then both sides get RTC_TIMEOUT and the call is over. */
export const RTC_RING_TIMEOUT_MS = 60_000;
/** rtc_voip_push_daily_quota (spec 003 §5): VoIP pushes one device may get per day (UTC); past it the device is not pushed. */
export const RTC_VOIP_PUSH_DAILY_QUOTA = 200;
/** An accepted call's busy mark lasts at most this long without an END (a crashed client's call is over then). */
export const RTC_CALL_MAX_MS = 4 * 60 * 60 * 1000;
/** A signal's payload (SDP, ICE, SFU/TURN credentials: passed through), at most. */
export const RTC_SIGNAL_MAX_PAYLOAD_BYTES = 16 * 1024;
/** The devices of one user an offline callee's INVITE is pushed to, at most (their live tokens, newest first). */
export const RTC_PUSH_DEVICES_MAX = 20;

/**
 * TYPING (spec 003 §2.1: transient, online only, never stored): a user's TYPING in one conversation
 * that says the same as their last one within this interval is acked and not passed on (the
 * members already know); a change (typing → stopped) always goes. Per user and conversation, on
 * the node that takes it.
 */
export const TYPING_MIN_INTERVAL_MS = 2000;
/** How long a device shows a member as typing after the last TYPING_UPDATE that said so (clients drop the indicator then). */
export const TYPING_INDICATOR_TTL_MS = 6000;
/** The merge window of TYPING_UPDATE per (conversation, user) per connection: at most one frame in it, the last (the same frame budget as reactions). */
export const TYPING_PUSH_MERGE_WINDOW_MS = 2000;

/*
 * Presence subscriptions (spec 003 §2.1: PRESENCE_SUB is transient, online only, never stored).
 * The spec names no numbers for them; these are the engine's, named like its others.
 */
/** The users one PRESENCE_SUB names, at most (a device subscribes to what it shows: a page of members). */
export const PRESENCE_SUB_MAX_USERS = 100;
/** The (group, user) subscriptions one connection holds, at most. */
export const MAX_PRESENCE_SUBSCRIPTIONS_PER_CONNECTION = 500;
/** PRESENCE_SUBs per user and conversation per second, on the node that takes them (burst PRESENCE_SUB_BURST). */
export const PRESENCE_SUB_RATE = 1;
export const PRESENCE_SUB_BURST = 5;
/**
 * The merge window of PRESENCE_UPDATE per connection: at most one frame in it, carrying the last
 * state of each user that changed (absolute, so a user who went and came back inside it is not in
 * it); the first change after a quiet window goes at once. Under the same frame budget as typing.
 */
export const PRESENCE_PUSH_MERGE_WINDOW_MS = 2000;
/** room_msg_rate (spec 003 §1.5): messages per second one room's writer takes; past it ROOM_SEND is refused RATE_LIMITED with retry_after_ms. */
export const ROOM_MSG_RATE = 20;
/** A room's write bucket holds this many messages (one second of room_msg_rate): a burst past it is refused. */
export const ROOM_MSG_BURST = 20;
/**
 * room_outbound_frame_rate (spec 003 §1.5): room frames per second one connection gets, at most;
 * the messages of its rooms inside one 1/rate interval go out merged in one ROOM_BATCH's windows.
 */
export const ROOM_OUTBOUND_FRAME_RATE = 10;
/**
 * The share of the node's time (percent) its room writes may take while a frame interval's
 * ROOM_BATCHes go out (not a spec number; spec 003 C-3's isolation): after a turn of writes that
 * took t, the next waits t × (100 − share) / share. The rest of the node (a 1:1 message's commit,
 * relay and push) and the processes beside it keep the other 75 %; a room with more connections
 * than that share writes in an interval gets fewer, fuller frames (setting `rooms.flush_share_percent`).
 */
export const ROOM_FLUSH_SHARE_PERCENT = 25;
/** max_rooms_per_connection (spec 003 §1.5): rooms one connection may be in at a time; a ROOM_JOIN past it is refused. */
export const MAX_ROOMS_PER_CONNECTION = 20;
/** room_log_retention_minutes (spec 003 §1.3, ADR-0007): a room's ring buffer keeps messages at most this long. */
export const ROOM_LOG_RETENTION_MINUTES = 30;
/** The ring buffer's count cap (spec 003 §1.3 "max_items"; the spec names no number): whichever of the two comes first evicts. 50 s at room_msg_rate. */
export const ROOM_RING_MAX_ITEMS = 1000;
/** A room message's payload, at most (bytes): the ring's memory is ROOM_RING_MAX_ITEMS of these per room at worst. */
export const ROOM_MAX_PAYLOAD_BYTES = 8 * 1024;
/** Events one ROOM_BATCH answer to a ROOM_REPLAY (or a ROOM_JOIN with a cursor) carries, at most; `more` says a next REPLAY continues. */
export const ROOM_REPLAY_PAGE_LIMIT = 100;
/** How often a node tells each room's writer how many of its connections are in the room (a moved writer learns where to send within this). */
export const ROOM_INTEREST_REFRESH_MS = 1000;
/** A node's count at a writer lapses this long after its last refresh (a dead node's connections stop counting, and get nothing). */
export const ROOM_INTEREST_TTL_MS = 3500;
/** room_seq = (room_epoch << ROOM_COUNTER_BITS) | counter (spec 003 §1.2, PLAN §6.6): 16 bits of epoch above 48 of counter. */
export const ROOM_COUNTER_BITS = 48;

/** A reaction_key (a short enum string, spec 003 §4.3), at most, in UTF-8 bytes: printable, no spaces or control characters. */
export const REACTION_KEY_MAX_BYTES = 64;
/** The most distinct reaction keys one message may carry: the summary is one bounded entry, read with its message. */
export const REACTION_MAX_KEYS_PER_MESSAGE = 64;
/**
 * The most messages whose REACTION_UPDATE one node holds in a merge window at once (~200 B each);
 * past it an update of a message not held is not pushed (qim_reaction_updates_total{outcome="dropped"}):
 * devices get its counts with their next history read, the node's memory stays bounded.
 */
export const REACTION_MERGE_MAX_PENDING = 100_000;
/** The most message types one tenant declares (core/registry): the whole registry is one bounded read. */
export const REGISTRY_MAX_TYPES = 256;
/** A message type's preview_template, at most (characters). */
export const PREVIEW_TEMPLATE_MAX_CHARS = 200;
/**
 * registry_reload_interval (issue 29): a node re-reads a tenant's registry version at most this long
 * after it last did, before a send uses it; a send that starts this long after a change committed
 * uses the new version (docs/operator-guide.md "Message types").
 */
export const REGISTRY_RELOAD_INTERVAL_MS = 1000;
/** The tenants whose registry one node keeps in memory (the oldest leaves first). */
export const REGISTRY_CACHE_TENANTS_MAX = 10_000;
/** A CMD message's payload, at most (spec 001 CMD send; stored in the CMD log's history entry). */
export const CMD_MAX_PAYLOAD_BYTES = 64 * 1024;
/**
 * The most recipients one CMD message may have (named, or a source group's active members): the
 * commit script reads the member table and writes the audience into the history entry in one
 * atomic step that blocks its Redis instance; at 10,000 (MAX_INITIAL_MEMBERS) that step is a few
 * ms and the entry ~320 KB, and every owner's pending buffer gains an entry per recipient. Beyond
 * it a command should name its recipients in batches.
 */
export const CMD_MAX_RECIPIENTS = 10_000;

// ---- Wire: what one request or answer may carry on each door.

/** The HTTP API's (/message/sync, /message/syncack) largest request body read (a sync or ack request is a few dozen bytes). */
export const CMD_HTTP_MAX_BODY_BYTES = 64 * 1024;
/**
 * The client gateway's largest frame (one WebSocket message), either way: a SEND's payload up to
 * MESSAGE_MAX_PAYLOAD_BYTES with its envelope fits; a bigger message closes the connection with 1009
 * (message too big), which ws enforces before it buffers the rest.
 */
export const GATEWAY_MAX_FRAME_BYTES = 128 * 1024;
/** Requests of one gateway connection answered at a time; one past it is refused RATE_LIMITED (a device waits for its answers). */
export const GATEWAY_MAX_IN_FLIGHT = 64;
/**
 * per_user_msg_rate (spec 003 §4, §6: counted apart from per_user_reaction_rate; the spec names it
 * without a number): SENDs per second one user may make through one node's gateway, all of the
 * user's devices on that node together (the gateway.user_msg_rate setting). A SEND past it is
 * answered RATE_LIMITED with retry_after_ms and nothing is written.
 */
export const PER_USER_MSG_RATE = 20;
/** A user's SEND bucket holds this many seconds of per_user_msg_rate: a device back online flushes its outbox at once up to it. */
export const PER_USER_MSG_BURST_SECONDS = 2;
/** MARK_READs per second of one connection (burst GATEWAY_MARK_READ_BURST); past it RATE_LIMITED, nothing written. */
export const GATEWAY_MARK_READ_RATE = 10;
export const GATEWAY_MARK_READ_BURST = 20;
/** Other requests (AUTH, PING, PULL_HISTORY, PULL_SESSION_LIST, LEAVE_GROUP) per second of one connection (burst GATEWAY_REQUEST_BURST); past it RATE_LIMITED. */
export const GATEWAY_REQUEST_RATE = 50;
export const GATEWAY_REQUEST_BURST = 100;
/**
 * Refusals per second one connection may earn (burst GATEWAY_REFUSAL_BURST) before it is closed
 * with 1008 (policy violation): a device that keeps sending past RATE_LIMITED answers is flooding.
 */
export const GATEWAY_REFUSAL_RATE = 10;
export const GATEWAY_REFUSAL_BURST = 100;
/**
 * Failed upgrades (no token, or a token that does not verify) per second of one remote address
 * (burst GATEWAY_AUTH_FAILURE_BURST): past it every upgrade from that address is refused 429 with
 * Retry-After, before any token is verified, until the bucket refills.
 */
export const GATEWAY_AUTH_FAILURE_RATE = 1;
export const GATEWAY_AUTH_FAILURE_BURST = 20;
/** How long a gateway connection may stay before its AUTH frame arrives: it is closed with 4401 after this. */
export const GATEWAY_AUTH_TIMEOUT_MS = 10_000;
/** How long a gateway connection may stay silent (no frame from the device; a PING counts): closed with 4408 after this. */
export const GATEWAY_IDLE_TIMEOUT_MS = 90_000;
/**
 * A connection's push budget (issue 27): bytes queued on its socket past which the gateway stops
 * pushing to it and sends one RESYNC (the device catches up by pulling; pushes resume with its
 * next PULL_SESSION_LIST), so that a slow device holds at most this much of the node's memory.
 */
export const GATEWAY_PUSH_SOFT_MARK_BYTES = 1024 * 1024;
/**
 * The payload bytes one HISTORY_BATCH carries at most: a page stops before the message that would
 * pass it (the first message always goes) and says `more`, so that an answer of 999 messages of
 * 64 KiB is not a 64 MiB frame.
 */
export const GATEWAY_MAX_ANSWER_PAYLOAD_BYTES = 1024 * 1024;
/**
 * A draining node's RECONNECT hints (issue 27): each connection is told to reconnect after a delay
 * drawn uniformly from [0, this), so that a drain of N devices is about N / 10 s reconnects per
 * second elsewhere, not a storm.
 */
export const GATEWAY_DRAIN_SPREAD_MS = 10_000;
/** How long after its hint's delay a connection that did not go is closed (1001). */
export const GATEWAY_RECONNECT_GRACE_MS = 5_000;
/** Bytes queued on a socket past which the connection is closed (4429): a device that reads nothing at all, pushes or answers. */
export const GATEWAY_PUSH_HARD_MARK_BYTES = 8 * 1024 * 1024;
/** The admin gRPC server's largest request (grpc.max_receive_message_length): a bulk membership call of MAX_USERS_PER_MEMBERSHIP_CALL users fits many times. */
export const ADMIN_GRPC_MAX_RECEIVE_BYTES = 4 * 1024 * 1024;
/** The node RPC server's largest request: a batch of at most MAX_PUSH_INTENTS intents. */
export const NODE_RPC_MAX_RECEIVE_BYTES = 1024 * 1024;
/** The node RPC client's largest answer (a CmdSync of up to CMD_SYNC_MAX_LIMIT messages with their payloads), 64 MiB. */
export const NODE_RPC_MAX_ANSWER_BYTES = 64 * 1024 * 1024;
/** PushIntents (node RPC): the most CMD conversation intents one call carries (a router sends one per owner group; a peer batching more is refused). */
export const MAX_PUSH_INTENTS = 1000;

/** Rows per conversation-list page: the default and the most (`session_list_page_limit`, spec 002 §2.2), as one pair for pageLimit. */
export const SNAPSHOT_PAGE = { default: SESSION_PAGE_DEFAULT, max: SESSION_PAGE_LIMIT } as const;

declare const bounded: unique symbol;
/**
 * A count a caller asked for, already within its bounds: made only by cmdSyncLimit and pageLimit,
 * where a request enters (an adapter's edge), so that the layers below take it as it is and never
 * bound it again.
 */
export type BoundedLimit = number & { readonly [bounded]: true };

/** A CMD sync or pending look's limit (spec 001): 0, negative or not a number → CMD_SYNC_DEFAULT_LIMIT; above CMD_SYNC_MAX_LIMIT → the maximum. */
export function cmdSyncLimit(requested: number): BoundedLimit {
  if (!Number.isFinite(requested) || requested <= 0) return CMD_SYNC_DEFAULT_LIMIT as BoundedLimit;
  return Math.min(Math.floor(requested), CMD_SYNC_MAX_LIMIT) as BoundedLimit;
}

/**
 * A page size as a request names it (0: the default), refused when it is past `bounds.max` or not
 * a whole number: the conversation list's pages (SNAPSHOT_PAGE) refuse rather than cap, so that a
 * client learns the bound instead of paging in smaller steps than it thinks.
 */
export function pageLimit(requested: number, bounds: { readonly default: number; readonly max: number }, field = "limit"): BoundedLimit {
  if (requested === 0) return bounds.default as BoundedLimit;
  if (!Number.isSafeInteger(requested) || requested < 0) throw new InvalidArgumentError(field, `${field} must be an integer from 1 to ${bounds.max} (0: ${bounds.default})`);
  if (requested > bounds.max) throw new InvalidArgumentError(field, `${field} is at most ${bounds.max}`);
  return requested as BoundedLimit;
}

// ---- Device tokens (core/tokens, issue 27).

/** The longest life a device token may be issued with (30 days): a stolen token dies by itself, and a revocation is kept no longer than this. */
export const TOKEN_TTL_MAX_MS = 30 * 24 * 3600 * 1000;
/** The default life of a device token (`qimctl token issue` without --ttl): 7 days. */
export const TOKEN_TTL_DEFAULT_MS = 7 * 24 * 3600 * 1000;
/** The shortest life (a minute): shorter tokens expire between issue and connect on a skewed clock. */
export const TOKEN_TTL_MIN_MS = 60 * 1000;
/** Keys a token key file may hold: the newest signs, both verify (one rotation in flight). */
export const TOKEN_ACTIVE_KEYS_MAX = 2;
/** Live (issued, unexpired, unrevoked) tokens one user may hold; past it an issue is refused until some expire or are revoked. */
export const TOKENS_PER_USER_MAX = 1000;
/** Tokens per `token list` page: the default and the most. */
export const TOKEN_LIST_PAGE = { default: 100, max: 1000 } as const;
/** A device id: 1 to 128 characters of A-Z a-z 0-9 . _ : - (it appears in tokens, keys and audit lines). */
export const DEVICE_ID_MAX_CHARS = 128;
/** The largest token string the verifier reads (a token is about 400 bytes; longer input is refused before parsing). */
export const TOKEN_MAX_CHARS = 4096;
/** Verified tokens the verifier's cache holds per process (LRU by token string): a reconnect storm verifies each signature once. */
export const TOKEN_VERIFY_CACHE_MAX = 100_000;
/**
 * Retention (issue 26): the most history entries one trim step removes, or reads to find the age
 * floor (its entries are copied into Lua: a 1,000-user join event is ~21 KB, so 200 of the worst
 * kind stay near 4 MB, the recompute's old bound); one step also HSCANs this many idempotency ids.
 */
export const RETENTION_TRIM_STEP_RECORDS = 200;
/** Retention: conversations of a bucket's directory read per page (ZRANGEBYLEX … LIMIT). */
export const RETENTION_DIRECTORY_PAGE = 100;
/** Retention: trim steps one conversation gets per round before the round moves on (the rest waits for the next round, counted as behind). */
export const RETENTION_STEPS_PER_CONVERSATION = 50;

/**
 * A target conversation_seq from the wire (a uint64 of the admin API or a gateway frame): at least
 * 1; past 2^53−1 no message has one, so such a seq is read as 2^53−1, which names none either (a
 * NOT_FOUND, never a rounded seq that could name another message).
 */
export function wireTargetSeq(seq: bigint, field = "conversation_seq"): number {
  if (seq < 1n) throw new InvalidArgumentError(field, `${field} must be ≥ 1`);
  return seq > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(seq);
}
