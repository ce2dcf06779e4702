import {
  AlreadyExistsError,
  DEFAULT_MAX_GROUP_MEMBERS,
  FailedPreconditionError,
  GROUP_PAGE_DEFAULT,
  GROUP_PAGE_LIMIT,
  HISTORY_PAGE_DEFAULT,
  HISTORY_PAGE_LIMIT,
  hexToUuid,
  InternalError,
  InvalidArgumentError,
  KeySpace,
  MAX_INITIAL_MEMBERS,
  MAX_MENTIONS,
  MAX_USERS_PER_MEMBERSHIP_CALL,
  MESSAGE_MAX_PAYLOAD_BYTES,
  UNREAD_PRECISE_LIMIT,
  MembershipChangedError,
  newMessageId,
  newUuid,
  NotFoundError,
  parseUuid,
  PermissionDeniedError,
  REDIS_CALL_MEMBER_BUDGET,
  uuidToHex,
  VersionConflictError,
  type Uuid,
} from "../base/index.js";
import type { RedisStore } from "../store/index.js";
import { isCustomType, RESERVED_PREFIX, registryMetrics, type RegistrySnapshot } from "../registry/index.js";
import { decodeHistoryEntry, decodeHistoryParts, encodeHistoryRest, HIST_FIELD, TRANSIENT_SEQ, validateContentType, type CustomTypeStamp, type HistoryRecord } from "./history.js";
import { conversationKeys, reactionWhoKey, type ConversationKeys } from "./keys.js";
import { parseModerationReason, writeAnchorEvent, type AnchorResult } from "./anchor.js";
import {
  applyMembershipScript, conversationSummaryScript, createGroupScript, dissolveGroupScript, markReadScript, readHistoryScript, readPlanScript, transferOwnerScript,
  type SummaryReply,
} from "./scripts.js";
import { encodeGroupEventPayload, GROUP_EVENT_CUSTOM_TYPE, GroupEventOp, groupDissolvedError } from "./group-event.js";
import {
  ADMIN_ACTOR,
  encodeMembershipPayload,
  MEMBERSHIP_CUSTOM_TYPE,
  membershipIdempotencyId,
  MembershipOp,
  opCode,
  type MembershipOpCode,
  type MembershipOpName,
} from "./membership-event.js";
import { metrics } from "./metrics.js";
import { GroupCommitWriter } from "./writer.js";

export interface ConversationOptions {
  /** Prefix of every key; tests and co-hosted deployments use their own. */
  keyPrefix?: string;
  /** membership_event_broadcast_max_members (ADR-0021 §2). */
  broadcastMaxMembers?: number;
  /** The most distinct users one add/remove call may name. */
  maxTargetsPerCall?: number;
  /** The most initial members a group may be created with. */
  maxInitialMembers?: number;
  /** groups.max_members: the most current (ACTIVE) members a group may have (create, add). */
  maxGroupMembers?: number;
  /** unread_precise_limit (spec 002 §3.3). */
  unreadPreciseLimit?: number;
  /** Re-freezes after "membership changed" before giving up (DESIGN §2: at most 3). */
  maxRetries?: number;
  /** The most bytes of one message payload. */
  maxPayloadBytes?: number;
  /** The most messages of one conversation committed by one script call (group commit). */
  maxSendBatch?: number;
  /** Called after a commit landed in a bucket's outbox (the relay's low-latency kick). */
  onCommit?: (bucket: number) => void;
  /** Called after a read position moved (the conversation list's hook; awaited, its failure is the caller's). */
  onRead?: (read: { tenant: Uuid; group: Uuid; user: Uuid; readConversationSeq: number }) => Promise<void> | void;
  /**
   * The user's clear and delete watermarks per group (hidden_before and deleted_before of spec
   * 002 §7, kept by the conversation list): history and summaries show nothing at or below them
   * and count unread from them. Absent: 0 for every group.
   */
  watermarks?: (tenant: Uuid, user: Uuid, groups: readonly Uuid[]) => Promise<readonly ContentWatermarks[]>;
  /**
   * The tenant's message-type registry as a send applies it (core/registry, issue 29): a custom
   * type's message is sent only when declared, under its declaration. Absent: no custom type is
   * declared for any tenant (only ordinary messages and MIME types are sent).
   */
  messageTypes?: (tenant: Uuid) => Promise<RegistrySnapshot> | RegistrySnapshot;
  /** Pushes a message that is never stored (an ephemeral type's) to the group's members online now (core/delivery pushTransient). */
  onTransient?: (item: { tenant: Uuid; conversation: Uuid; conversationSeq: 0; entry: string; createdAt: number }) => Promise<unknown>;
  now?: () => number;
}

/** A user's clear and delete watermarks of one conversation (spec 002 §7). */
export interface ContentWatermarks {
  hiddenBefore: number;
  deletedBefore: number;
}

/** No clear and no delete. */
export const NO_CONTENT_WATERMARKS: ContentWatermarks = { hiddenBefore: 0, deletedBefore: 0 };

type Hooks = "now" | "onCommit" | "onRead" | "watermarks" | "messageTypes" | "onTransient";

export const CONVERSATION_DEFAULTS: Required<Omit<ConversationOptions, Hooks>> = {
  keyPrefix: "qim",
  broadcastMaxMembers: 500,
  maxTargetsPerCall: MAX_USERS_PER_MEMBERSHIP_CALL,
  maxInitialMembers: MAX_INITIAL_MEMBERS,
  maxGroupMembers: DEFAULT_MAX_GROUP_MEMBERS,
  unreadPreciseLimit: UNREAD_PRECISE_LIMIT,
  maxRetries: 3,
  maxPayloadBytes: MESSAGE_MAX_PAYLOAD_BYTES,
  maxSendBatch: 128,
};

export type MemberState = "ACTIVE" | "LEFT" | "REMOVED";

export interface Member {
  userId: Uuid;
  joinedAt: number;
  leftAt: number | null;
  state: MemberState;
}

export interface GroupInfo {
  tenant: Uuid;
  group: Uuid;
  owner: Uuid;
  version: number;
  memberCount: number;
  createdAt: number;
  /** The latest conversation_seq allocated (0 before the first message). */
  conversationSeq: number;
  /** DISSOLVED once `group dissolve` committed its event (grpmeta.dissolved_at is set). */
  state: GroupState;
  /** The dissolve event's conversation_seq J; null while ACTIVE. */
  dissolvedAt: number | null;
  /** groups.max_members of this engine: the most current members a create or add may leave the group with. */
  maxMembers: number;
}

export type GroupState = "ACTIVE" | "DISSOLVED";

export interface CreateGroupRequest {
  tenant: string;
  group?: string;
  owner: string;
  members?: string[];
}

export interface MembershipChangeRequest {
  tenant: string;
  group: string;
  users: string[];
  /** Compare-and-set against the group's member version. */
  expectVersion?: number;
  /** Plan only: nothing is written. */
  dryRun?: boolean;
}

export type MembershipOutcome = "committed" | "duplicate" | "noop" | "planned";

export interface MembershipChangeResult {
  op: MembershipOpName;
  tenant: Uuid;
  group: Uuid;
  outcome: MembershipOutcome;
  /** Users whose membership this change alters (after filtering out those already in that state). */
  changed: Uuid[];
  /** The CONTROL message's conversation_seq; null when nothing was (or, dry-run, would be) committed. */
  eventConversationSeq: number | null;
  messageId: Uuid | null;
  /** The member version after the change (the current version for noop and dry-run). */
  version: number;
  memberCount: number;
  /** 32 hex digits; empty when the plan is empty. */
  idempotencyId: string;
  audienceSize: number;
  attempts: number;
}

export interface TransferOwnerRequest {
  tenant: string;
  group: string;
  /** The new owner: a current (ACTIVE) member. */
  to: string;
  /** Compare-and-set against the group's member version. */
  expectVersion?: number;
  /** Plan only: nothing is written. */
  dryRun?: boolean;
}

export interface TransferOwnerResult {
  tenant: Uuid;
  group: Uuid;
  /** committed; noop: `to` already is the owner (a retry after the transfer took effect); planned: dry run. */
  outcome: "committed" | "noop" | "planned";
  /** The owner before this call (equal to `owner` for noop). */
  previousOwner: Uuid;
  /** The owner after the call (the planned one for a dry run). */
  owner: Uuid;
  /** The member version after the transfer (the current one for noop and dry run). */
  version: number;
  attempts: number;
}

export interface DissolveGroupRequest {
  tenant: string;
  group: string;
  /** Compare-and-set against the group's member version. */
  expectVersion?: number;
  /** Plan only: nothing is written. */
  dryRun?: boolean;
}

export interface DissolveGroupResult {
  tenant: Uuid;
  group: Uuid;
  /** committed; noop: the group already was dissolved (a re-run); planned: dry run. */
  outcome: "committed" | "noop" | "planned";
  /** The recorded sender of the dissolve event. */
  owner: Uuid;
  /** Members at the dissolve (the event's audience); for a dry run, those it would have. */
  memberCount: number;
  /** The member version after the dissolve (the current one for a dry run). */
  version: number;
  /** The dissolve event's conversation_seq J (null for a dry run). */
  dissolvedAt: number | null;
  /** The dissolve event's message id (null for a dry run, or a noop whose event retention dropped). */
  messageId: Uuid | null;
  attempts: number;
}

export interface ListGroupsRequest {
  tenant: string;
  /** Only the groups this user owns. */
  owner?: string;
  /** Keys examined per scan step and the page size aimed at (1–1,000; default 100). */
  limit?: number;
  /** The previous page's nextCursor; absent or "": from the start. */
  cursor?: string;
}

export interface GroupListPage {
  groups: GroupInfo[];
  /** "" after the last page. */
  nextCursor: string;
}

export interface ListMembersRequest {
  tenant: string;
  group: string;
  /** List as this user: only while a current member, and only current members. */
  asUser?: string;
  /** HSCAN COUNT: the page size aimed at, 1 to REDIS_CALL_MEMBER_BUDGET (the default). */
  limit?: number;
  /** The previous page's nextCursor; absent or "": from the start. */
  cursor?: string;
}

export interface MemberPage {
  /** The member version when this page was read. */
  version: number;
  /** Current (ACTIVE) members when this page was read (grpmeta's member_count). */
  memberCount: number;
  /** This page's members, by user id (a member may show again on a later page, see listMembers). */
  members: Member[];
  /** "" after the last page. */
  nextCursor: string;
}

/** A member-list cursor: Redis's HSCAN cursor, an unsigned 64-bit integer in decimal. */
const MEMBER_CURSOR = /^\d{1,20}$/;

/** The most scan steps one group-list page runs before it answers (with what it found so far). */
export const GROUP_LIST_MAX_STEPS = 16;

export interface SendRequest {
  tenant: string;
  group: string;
  sender: string;
  /** UTF-8 text; or give payload + contentType. */
  text?: string;
  payload?: Uint8Array;
  contentType?: string;
  /** Idempotency key of the client (a UUID); a retry with the same id returns the existing commit. */
  clientMessageId?: string;
  /** Users the message mentions (spec 002 §3.2: their mention_count); at most MAX_MENTIONS distinct. */
  mentions?: string[];
}

export interface SendResult {
  tenant: Uuid;
  group: Uuid;
  conversationSeq: number;
  /** Null only for a duplicate whose history entry retention has dropped. */
  messageId: Uuid | null;
  /** An ephemeral type's message: pushed to the members online, stored nowhere (conversationSeq 0). */
  ephemeral?: boolean;
  /** The member version the audience was frozen at; a duplicate answers its original's (null only for an idempotency entry written before issue 24). */
  version: number | null;
  duplicate: boolean;
  attempts: number;
}

export interface HistoryPage {
  joinedAt: number;
  leftAt: number | null;
  state: MemberState;
  earliestAvailableConversationSeq: number;
  records: HistoryRecord[];
}

export interface ConversationSummary {
  tenant: Uuid;
  group: Uuid;
  userId: Uuid;
  joinedAt: number;
  leftAt: number | null;
  state: MemberState;
  readConversationSeq: number;
  /** The latest record the user may see, or null when none. */
  head: HistoryRecord | null;
  unread: number;
  /** False when head − base exceeded unread_precise_limit and unread is that limit. */
  unreadExact: boolean;
}

const STATE: Record<string, MemberState> = { A: "ACTIVE", L: "LEFT", R: "REMOVED" };

export function parseMemberValue(userHex: string, raw: string): Member {
  const m = /^(\d+)\|(\d*)\|([ALR])$/.exec(raw);
  if (!m) throw new InternalError(`malformed member entry for ${userHex}: ${raw}`);
  return { userId: hexToUuid(userHex), joinedAt: Number(m[1]), leftAt: m[2] === "" ? null : Number(m[2]), state: STATE[m[3]!]! };
}

/** A group's state from grpmeta.dissolved_at (set once, by dissolveGroup-6). */
function dissolution(dissolvedAt: string | null | undefined): Pick<GroupInfo, "state" | "dissolvedAt"> {
  return dissolvedAt == null ? { state: "ACTIVE", dissolvedAt: null } : { state: "DISSOLVED", dissolvedAt: Number(dissolvedAt) };
}

function positiveInt(v: unknown, field: string, min = 0): number {
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < min) throw new InvalidArgumentError(field, `${field} must be an integer ≥ ${min}`);
  return v;
}

/**
 * The engine's write and read paths for groups: create, membership changes as CONTROL messages,
 * the send path with its version check, and the interval-clipped reads (ADR-0021 §1–3).
 */
export class ConversationService {
  readonly keys: KeySpace;
  readonly opts: Required<Omit<ConversationOptions, Hooks>> & {
    now: () => number; onCommit?: (bucket: number) => void; onRead?: ConversationOptions["onRead"]; watermarks?: ConversationOptions["watermarks"]; messageTypes?: ConversationOptions["messageTypes"];
    onTransient?: ConversationOptions["onTransient"];
  };

  constructor(readonly store: RedisStore, options: ConversationOptions = {}) {
    this.opts = { ...CONVERSATION_DEFAULTS, now: Date.now, ...options };
    this.keys = new KeySpace(this.opts.keyPrefix);
    this.writer = new GroupCommitWriter(store, { maxRetries: this.opts.maxRetries, maxBatch: this.opts.maxSendBatch, ...(options.onCommit ? { onCommit: options.onCommit } : {}) });
  }

  /** Key names of a conversation, memoised: computing the bucket hashes (blake3) every call. */
  conversationKeys(tenant: Uuid, group: Uuid): ConversationKeys {
    const id = tenant + group;
    let k = this.keyCache.get(id);
    if (!k) {
      if (this.keyCache.size >= 100_000) this.keyCache.clear();
      k = conversationKeys(this.keys, tenant, group);
      this.keyCache.set(id, k);
    }
    return k;
  }

  private readonly keyCache = new Map<string, ConversationKeys>();
  private readonly writer: GroupCommitWriter;

  private clientOf(k: ConversationKeys) {
    return this.store.clientFor(k.tag);
  }

  private parseUsers(users: unknown, field: string, max: number): Uuid[] {
    if (!Array.isArray(users) || users.length === 0) throw new InvalidArgumentError(field, `${field} must name at least one user`);
    const parsed = users.map((u, i) => parseUuid(u, `${field}[${i}]`));
    const distinct = [...new Set(parsed)].sort();
    if (distinct.length > max) throw new InvalidArgumentError(field, `${field} names ${distinct.length} distinct users; the limit per call is ${max}`);
    return distinct;
  }

  async createGroup(req: CreateGroupRequest): Promise<GroupInfo> {
    const tenant = parseUuid(req.tenant, "tenant");
    const group = req.group === undefined ? newUuid() : parseUuid(req.group, "group");
    const owner = parseUuid(req.owner, "owner");
    const members = req.members && req.members.length > 0
      ? [...new Set([owner, ...this.parseUsers(req.members, "members", this.opts.maxInitialMembers)])]
      : [owner];
    if (members.length > this.opts.maxInitialMembers) {
      throw new InvalidArgumentError("members", `a group is created with at most ${this.opts.maxInitialMembers} members`);
    }
    // the group does not exist yet: its size is the distinct members named, known here exactly
    if (members.length > this.opts.maxGroupMembers) throw this.groupFull(members.length, 0, this.opts.maxGroupMembers, "members");
    const k = this.conversationKeys(tenant, group);
    const createdAt = this.opts.now();
    const reply = await this.store.commit(createGroupScript, this.clientOf(k), k, { owner: uuidToHex(owner), createdAt, members: members.map(uuidToHex) });
    if (reply.status === "GROUP_EXISTS") throw new AlreadyExistsError("group", group);
    return { tenant, group, owner, version: reply.version, memberCount: reply.memberCount, createdAt, conversationSeq: 0, state: "ACTIVE", dissolvedAt: null, maxMembers: this.opts.maxGroupMembers };
  }

  /**
   * A tenant's groups, a page at a time, by a bounded SCAN of the group meta keys on each data
   * node in turn (no index to maintain, so groups created by any version are listed). The cursor is
   * "node.scanCursor"; a page runs at most GROUP_LIST_MAX_STEPS steps of COUNT `limit` and stops
   * once it holds `limit` groups, so it may hold a few more than `limit` (the last step's finds are
   * never dropped) or fewer (even none, with a cursor to go on). SCAN's guarantee holds: a group
   * that exists for the whole listing is on some page; one may appear twice (a rehash during it).
   */
  async listGroups(req: ListGroupsRequest): Promise<GroupListPage> {
    const tenant = parseUuid(req.tenant, "tenant");
    const owner = req.owner === undefined || req.owner === "" ? undefined : parseUuid(req.owner, "owner");
    const limit = req.limit === undefined ? GROUP_PAGE_DEFAULT : positiveInt(req.limit, "limit", 1);
    if (limit > GROUP_PAGE_LIMIT) throw new InvalidArgumentError("limit", `limit is at most ${GROUP_PAGE_LIMIT}`);
    const nodes = this.store.dataNodes();
    let node = 0;
    let scan = "0";
    if (req.cursor) {
      const m = /^(\d{1,4})\.(\d{1,20})$/.exec(req.cursor);
      if (!m || Number(m[1]) > nodes.length) throw new InvalidArgumentError("cursor", "cursor is not one this listing gave");
      node = Number(m[1]);
      scan = m[2]!;
    }
    const glob = (t: string) => t.replace(/[*?[\]\\]/g, "\\$&");
    const pattern = `${glob(this.keys.prefix)}:*:grpmeta:${uuidToHex(tenant)}:*`;
    const found: string[] = [];
    for (let step = 0; step < GROUP_LIST_MAX_STEPS && node < nodes.length && found.length < limit; step++) {
      const [next, keys] = await nodes[node]!.scan(scan, "MATCH", pattern, "COUNT", limit);
      found.push(...keys);
      if (next === "0") {
        node++;
        scan = "0";
      } else {
        scan = next;
      }
    }
    const groups: GroupInfo[] = [];
    const metas = await Promise.all(found.map(async (key) => {
      const group = hexToUuid(key.slice(key.lastIndexOf(":") + 1));
      const k = this.conversationKeys(tenant, group);
      const res = await this.clientOf(k).multi().hmget(k.grpmeta, "version", "owner", "member_count", "created_at", "dissolved_at").get(k.cseq).exec();
      return { group, meta: (res?.[0]?.[1] ?? []) as (string | null)[], seq: (res?.[1]?.[1] ?? null) as string | null };
    }));
    for (const { group, meta, seq } of metas) {
      const [version, ownerHex, count, created, dissolved] = meta;
      if (version == null || ownerHex == null) continue; // deleted since the scan saw it
      const g: GroupInfo = {
        tenant, group, owner: hexToUuid(ownerHex), version: Number(version), memberCount: Number(count), createdAt: Number(created), conversationSeq: Number(seq ?? 0),
        ...dissolution(dissolved), maxMembers: this.opts.maxGroupMembers,
      };
      if (owner === undefined || g.owner === owner) groups.push(g);
    }
    groups.sort((a, b) => a.group.localeCompare(b.group));
    return { groups, nextCursor: node >= nodes.length ? "" : `${node}.${scan}` };
  }

  async getGroup(tenantIn: string, groupIn: string): Promise<GroupInfo> {
    const tenant = parseUuid(tenantIn, "tenant");
    const group = parseUuid(groupIn, "group");
    const k = this.conversationKeys(tenant, group);
    const res = await this.clientOf(k).multi().hgetall(k.grpmeta).get(k.cseq).exec();
    const meta = res?.[0]?.[1] as Record<string, string> | undefined;
    if (!meta || meta.version === undefined) throw new NotFoundError("group", group);
    return {
      tenant,
      group,
      owner: hexToUuid(meta.owner!),
      version: Number(meta.version),
      memberCount: Number(meta.member_count),
      createdAt: Number(meta.created_at),
      conversationSeq: Number((res?.[1]?.[1] as string | null) ?? 0),
      ...dissolution(meta.dissolved_at),
      maxMembers: this.opts.maxGroupMembers,
    };
  }

  /** Admin add: each user joins with joined_at = J − 1 (the join event itself is visible). */
  addMembers(req: MembershipChangeRequest): Promise<MembershipChangeResult> {
    return this.changeMembership("join", req);
  }

  /** Admin remove: left_at = J, state REMOVED. The owner cannot be removed. */
  removeMembers(req: MembershipChangeRequest): Promise<MembershipChangeResult> {
    return this.changeMembership("remove", req);
  }

  /** A user leaves by themself: left_at = J, state LEFT; the recorded sender is the leaver. */
  leaveGroup(req: { tenant: string; group: string; user: string; expectVersion?: number; dryRun?: boolean }): Promise<MembershipChangeResult> {
    return this.changeMembership("leave", { tenant: req.tenant, group: req.group, users: [req.user], expectVersion: req.expectVersion, dryRun: req.dryRun });
  }

  private async changeMembership(op: MembershipOpName, req: MembershipChangeRequest): Promise<MembershipChangeResult> {
    const tenant = parseUuid(req.tenant, "tenant");
    const group = parseUuid(req.group, "group");
    const requested = this.parseUsers(req.users, "users", op === "leave" ? 1 : this.opts.maxTargetsPerCall);
    const expectVersion = req.expectVersion === undefined ? undefined : positiveInt(req.expectVersion, "expectVersion", 1);
    const k = this.conversationKeys(tenant, group);
    const client = this.clientOf(k);
    const code = opCode(op);
    const actor = op === "leave" ? requested[0]! : ADMIN_ACTOR;
    const requestedHex = requested.map(uuidToHex);

    for (let attempt = 1; ; attempt++) {
      // plan: one consistent read of the meta and the targets' member entries
      const plan = await readPlanScript.run(client, k, { targets: requestedHex });
      if (plan.status === "GROUP_NOT_FOUND") throw new NotFoundError("group", group);
      if (plan.dissolvedAt !== null) throw groupDissolvedError(group, plan.dissolvedAt);
      const { version: current, owner, memberCount } = plan;
      const isActive = requested.map((_, i) => plan.states[i] === "A");
      const changed = requested.filter((_, i) => (op === "join" ? !isActive[i] : isActive[i]));
      const base = { op, tenant, group, attempts: attempt };

      if (expectVersion !== undefined && expectVersion !== current) {
        const earlier = await this.findEarlierEvent(k, tenant, group, code, actor, expectVersion, requested);
        if (earlier) return { ...base, ...earlier, version: current, memberCount };
        throw new VersionConflictError(expectVersion, current);
      }
      if (op !== "join" && changed.includes(owner)) {
        throw new FailedPreconditionError(`the owner ${owner} cannot ${op === "leave" ? "leave" : "be removed from"} the group; transfer ownership first`, { field: "users" });
      }
      if (changed.length === 0) {
        const earlier = await this.findEarlierEvent(k, tenant, group, code, actor, current - 1, requested);
        if (earlier) return { ...base, ...earlier, version: current, memberCount };
        return { ...base, outcome: "noop", changed: [], eventConversationSeq: null, messageId: null, version: current, memberCount, idempotencyId: "", audienceSize: 0 };
      }

      const idem = Buffer.from(membershipIdempotencyId({ tenant, group, op: code, actor, version: current, targets: changed })).toString("hex");
      const after = memberCount + (op === "join" ? changed.length : -changed.length);
      // the plan's check (a dry run says so too); applyMembership checks again atomically
      if (op === "join" && after > this.opts.maxGroupMembers) throw this.groupFull(changed.length, memberCount, this.opts.maxGroupMembers, "users");
      if (req.dryRun) {
        const audienceSize = after <= this.opts.broadcastMaxMembers ? after + (op === "join" ? 0 : changed.length) : changed.length;
        return { ...base, outcome: "planned", changed, eventConversationSeq: null, messageId: null, version: current, memberCount: after, idempotencyId: idem, audienceSize };
      }

      const messageId = newMessageId();
      const sender = op === "leave" ? actor : owner;
      const rest = encodeHistoryRest({
        messageId, senderId: sender, kind: "control", countsUnread: false, createdAt: this.opts.now(),
        contentType: MEMBERSHIP_CUSTOM_TYPE, payload: encodeMembershipPayload({ op: code, actor, users: changed }),
      });
      const reply = await this.store.commit(applyMembershipScript, client, k, {
        idempotencyId: idem, version: current, op: code, rest, outboxRef: k.outboxRef, broadcastMaxMembers: this.opts.broadcastMaxMembers, maxMembers: this.opts.maxGroupMembers,
        targets: changed.map(uuidToHex),
      });
      const status = reply.status;
      if (reply.status === "OK" || reply.status === "DUPLICATE") {
        if (reply.status === "OK") {
          metrics.membershipEvents.inc({ op });
          this.opts.onCommit?.(k.bucket);
        }
        return {
          ...base,
          outcome: reply.status === "OK" ? "committed" : "duplicate",
          changed,
          eventConversationSeq: reply.conversationSeq,
          messageId: reply.messageId === "" ? null : hexToUuid(reply.messageId),
          version: reply.version,
          memberCount: reply.memberCount,
          idempotencyId: idem,
          audienceSize: reply.audienceSize,
        };
      }
      if (status === "GROUP_NOT_FOUND") throw new NotFoundError("group", group);
      if (reply.status === "GROUP_DISSOLVED") throw groupDissolvedError(group, reply.dissolvedAt);
      if (reply.status === "GROUP_FULL") throw this.groupFull(changed.length, reply.memberCount, reply.maxMembers, "users");
      if (status === "OWNER_IMMUTABLE") throw new FailedPreconditionError(`the owner cannot leave or be removed`, { field: "users" });
      // the version moved under a compare-and-set: a conflict; a stale plan at the expected version
      // is planned again (the next plan sees what moved) like any other stale plan
      if (expectVersion !== undefined && reply.status === "MEMBERSHIP_CHANGED") throw new VersionConflictError(expectVersion, reply.currentVersion);
      if (attempt > this.opts.maxRetries) throw new MembershipChangedError(attempt);
      metrics.membershipRetries.inc({ path: "membership" });
    }
  }

  /** A create or join that would take a group past groups.max_members: nothing was written. */
  private groupFull(joining: number, memberCount: number, max: number, field: string): FailedPreconditionError {
    const now = memberCount === 0 ? "" : ` (it has ${memberCount})`;
    return new FailedPreconditionError(
      `adding ${joining} member(s) would take the group past groups.max_members = ${max} current members${now}; nothing was changed`,
      { field, reason: "GROUP_FULL" },
    );
  }

  /**
   * Hands the group to a current member: one script checks the member version, sets the owner and
   * bumps the version (a compare-and-set like a membership change), with no CONTROL message — the
   * member set, intervals and audience do not change, and spec 000's payload has no such op.
   * Already owned by `to`: succeeds as a noop whatever the version, so a retry after the transfer
   * took effect (even with its old --expect-version) says so instead of failing.
   */
  async transferOwner(req: TransferOwnerRequest): Promise<TransferOwnerResult> {
    const tenant = parseUuid(req.tenant, "tenant");
    const group = parseUuid(req.group, "group");
    const to = parseUuid(req.to, "to");
    const expectVersion = req.expectVersion === undefined ? undefined : positiveInt(req.expectVersion, "expectVersion", 1);
    const k = this.conversationKeys(tenant, group);
    const client = this.clientOf(k);
    const notMember = () => new FailedPreconditionError(`user ${to} is not a member of group ${group}; the new owner must be a current member`, { field: "to", reason: "NOT_A_MEMBER" });
    for (let attempt = 1; ; attempt++) {
      const plan = await readPlanScript.run(client, k, { targets: [uuidToHex(to)] });
      if (plan.status === "GROUP_NOT_FOUND") throw new NotFoundError("group", group);
      if (plan.dissolvedAt !== null) throw groupDissolvedError(group, plan.dissolvedAt);
      const base = { tenant, group, attempts: attempt };
      if (plan.owner === to) return { ...base, outcome: "noop", previousOwner: to, owner: to, version: plan.version };
      if (expectVersion !== undefined && expectVersion !== plan.version) throw new VersionConflictError(expectVersion, plan.version);
      if (plan.states[0] !== "A") throw notMember();
      if (req.dryRun) return { ...base, outcome: "planned", previousOwner: plan.owner, owner: to, version: plan.version };

      const reply = await this.store.commit(transferOwnerScript, client, k, { version: plan.version, owner: uuidToHex(to) });
      switch (reply.status) {
        case "OK": return { ...base, outcome: "committed", previousOwner: hexToUuid(reply.previousOwner), owner: to, version: reply.version };
        case "DUPLICATE": return { ...base, outcome: "noop", previousOwner: to, owner: to, version: reply.version };
        case "GROUP_NOT_FOUND": throw new NotFoundError("group", group);
        case "GROUP_DISSOLVED": throw groupDissolvedError(group, reply.dissolvedAt);
        case "PLAN_STALE": throw notMember();
        case "MEMBERSHIP_CHANGED":
          if (expectVersion !== undefined) throw new VersionConflictError(expectVersion, reply.version);
          if (attempt > this.opts.maxRetries) throw new MembershipChangedError(attempt);
          metrics.membershipRetries.inc({ path: "membership" });
      }
    }
  }

  /**
   * Dissolves the group (issue 24; docs/architecture.md "Dissolving a group"): one CONTROL message
   * at J (qim.group.v1, op dissolve, sent as the owner) committed like a group message — its
   * audience the members at the new version, expanded by the relay — in the script that sets
   * grpmeta.dissolved_at = J and bumps the member version. Constant cost: no member entry is read
   * or rewritten; readers bound every interval at J (visibleBounds) and writers refuse from then on.
   * Already dissolved: succeeds as a noop whatever the version (a re-run says so; no second event).
   */
  async dissolveGroup(req: DissolveGroupRequest): Promise<DissolveGroupResult> {
    const tenant = parseUuid(req.tenant, "tenant");
    const group = parseUuid(req.group, "group");
    const expectVersion = req.expectVersion === undefined ? undefined : positiveInt(req.expectVersion, "expectVersion", 1);
    const k = this.conversationKeys(tenant, group);
    const client = this.clientOf(k);
    for (let attempt = 1; ; attempt++) {
      const plan = await readPlanScript.run(client, k, { targets: [] });
      if (plan.status === "GROUP_NOT_FOUND") throw new NotFoundError("group", group);
      const base = { tenant, group, attempts: attempt, owner: plan.owner, memberCount: plan.memberCount };
      if (plan.dissolvedAt !== null) {
        const entry = (await client.zrangebyscore(k.hist, plan.dissolvedAt, plan.dissolvedAt))[0];
        return { ...base, outcome: "noop", version: plan.version, dissolvedAt: plan.dissolvedAt, messageId: entry ? decodeHistoryEntry(entry).messageId : null };
      }
      if (expectVersion !== undefined && expectVersion !== plan.version) throw new VersionConflictError(expectVersion, plan.version);
      if (req.dryRun) return { ...base, outcome: "planned", version: plan.version, dissolvedAt: null, messageId: null };

      const rest = encodeHistoryRest({
        messageId: newMessageId(), senderId: plan.owner, kind: "control", countsUnread: false, createdAt: this.opts.now(),
        contentType: GROUP_EVENT_CUSTOM_TYPE, payload: encodeGroupEventPayload({ op: GroupEventOp.DISSOLVE, actor: ADMIN_ACTOR }),
      });
      const reply = await this.store.commit(dissolveGroupScript, client, k, { version: plan.version, rest, outboxRef: k.outboxRef });
      switch (reply.status) {
        case "OK":
        case "DUPLICATE": {
          if (reply.status === "OK") this.opts.onCommit?.(k.bucket);
          const messageId = reply.messageId === "" ? null : hexToUuid(reply.messageId);
          return { ...base, outcome: reply.status === "OK" ? "committed" : "noop", version: reply.version, dissolvedAt: reply.dissolvedAt, messageId };
        }
        case "GROUP_NOT_FOUND": throw new NotFoundError("group", group);
        case "MEMBERSHIP_CHANGED":
          if (expectVersion !== undefined) throw new VersionConflictError(expectVersion, reply.version);
          if (attempt > this.opts.maxRetries) throw new MembershipChangedError(attempt);
          metrics.membershipRetries.inc({ path: "membership" });
      }
    }
  }

  /**
   * Whether this change (same op and actor, these requested users) was already committed when the
   * group was at `version`: a retry of a change that took effect returns that event instead of a
   * second one, a noop or a conflict.
   *
   * The event's idempotency id covers the users it changed, which are the requested ones less
   * those already in the requested state at `version`. When every requested user was changed,
   * the id of the requested users finds it. Otherwise, when every requested user is in the
   * requested state now, the candidate is the event that last moved one of them (join: the
   * largest joined_at + 1; leave/remove: the largest left_at): it is this change's event exactly
   * when it has this op and actor, names only requested users and its id at `version` is recorded
   * with its seq — the others then were already in the requested state at `version` (nothing
   * moved them since), so the change planned at `version` would have named the same users.
   */
  private async findEarlierEvent(k: ConversationKeys, tenant: Uuid, group: Uuid, op: MembershipOpCode, actor: Uuid, version: number, requested: Uuid[]) {
    if (version < 1) return null;
    const client = this.clientOf(k);
    const recorded = async (targets: Uuid[]) => {
      const idem = Buffer.from(membershipIdempotencyId({ tenant, group, op, actor, version, targets })).toString("hex");
      const seq = await client.hget(k.idem, idem);
      return seq === null ? null : { idem, seq: Number(seq) };
    };
    const duplicate = (rec: HistoryRecord, idem: string, changed: Uuid[]) => (
      { outcome: "duplicate" as const, changed, eventConversationSeq: rec.conversationSeq, messageId: rec.messageId, idempotencyId: idem, audienceSize: 0 });

    const exact = await recorded(requested);
    if (exact) {
      const entry = (await client.zrangebyscore(k.hist, exact.seq, exact.seq))[0];
      return entry ? duplicate(decodeHistoryEntry(entry), exact.idem, requested) : null;
    }
    if (requested.length < 2) return null;
    const values = await client.hmget(k.grpmembers, ...requested.map(uuidToHex));
    let last = 0;
    for (const [i, raw] of values.entries()) {
      const m = raw === null ? null : parseMemberValue(uuidToHex(requested[i]!), raw);
      if (op === MembershipOp.JOIN) {
        if (m?.state !== "ACTIVE") return null;
        last = Math.max(last, m.joinedAt + 1);
      } else {
        if (m?.state === "ACTIVE") return null;
        if (m?.leftAt != null) last = Math.max(last, m.leftAt);
      }
    }
    if (last === 0) return null;
    const entry = (await client.zrangebyscore(k.hist, last, last))[0];
    const rec = entry ? decodeHistoryEntry(entry) : null;
    const event = rec?.membership;
    if (!rec || !event || event.op !== op || event.actor !== actor || event.users.length === 0) return null;
    const wanted = new Set(requested);
    if (!event.users.every((u) => wanted.has(u))) return null;
    const found = await recorded(event.users);
    return found && found.seq === rec.conversationSeq ? duplicate(rec, found.idem, [...event.users].sort()) : null;
  }

  /**
   * The send path (DESIGN §2): freeze the audience at member version V, commit in one script that
   * checks the version, re-freeze and retry at most maxRetries times when it moved (see
   * GroupCommitWriter for the batching).
   */
  async send(req: SendRequest): Promise<SendResult> {
    const tenant = parseUuid(req.tenant, "tenant");
    const group = parseUuid(req.group, "group");
    const sender = parseUuid(req.sender, "sender");
    const clientMessageId = req.clientMessageId === undefined ? newUuid() : parseUuid(req.clientMessageId, "clientMessageId");
    let payload: Uint8Array;
    let contentType: string;
    if (req.text !== undefined) {
      if (typeof req.text !== "string" || req.text.length === 0) throw new InvalidArgumentError("text", "text must not be empty");
      payload = Buffer.from(req.text, "utf8");
      contentType = "text/plain";
    } else if (req.payload !== undefined) {
      payload = req.payload;
      contentType = validateContentType(req.contentType ?? "application/octet-stream");
      if (contentType === MEMBERSHIP_CUSTOM_TYPE) throw new InvalidArgumentError("contentType", `${MEMBERSHIP_CUSTOM_TYPE} is reserved for membership events`);
      if (contentType === GROUP_EVENT_CUSTOM_TYPE) throw new InvalidArgumentError("contentType", `${GROUP_EVENT_CUSTOM_TYPE} is reserved for group lifecycle events`);
    } else {
      throw new InvalidArgumentError("text", "a message needs text or a payload");
    }
    if (payload.length > this.opts.maxPayloadBytes) throw new InvalidArgumentError("payload", `a message payload is at most ${this.opts.maxPayloadBytes} bytes`);
    // a custom type's message is sent under its declaration in the tenant's registry (spec 003 §3):
    // the engine decides by the type, never by the payload or by flags the sender picks
    let countsUnread = true;
    let orderNeutral = false;
    let custom: CustomTypeStamp | undefined;
    let ephemeral = false;
    if (isCustomType(contentType)) {
      // the snapshot is held (no await, no round trip) but when it is older than the reload interval
      let snapshot = this.opts.messageTypes?.(tenant) ?? null;
      if (snapshot instanceof Promise) snapshot = await snapshot;
      const d = this.declarationOf(snapshot, contentType, payload.length);
      countsUnread = d.countsUnread;
      // affects_session_order false: the record does not move the conversation (ord=0, as a recall event)
      orderNeutral = !d.affectsSessionOrder;
      custom = { registryVersion: snapshot!.version, schemaVersion: d.schemaVersion, timelineVisible: d.timelineVisible };
      ephemeral = d.deliveryClass === "ephemeral";
    }

    const mentions = req.mentions === undefined || req.mentions.length === 0 ? undefined : this.parseMentions(req.mentions);
    const k = this.conversationKeys(tenant, group);
    const messageId = newMessageId();
    const rest = encodeHistoryRest({
      messageId, senderId: sender, kind: "normal", countsUnread, createdAt: this.opts.now(), contentType, payload,
      ...(mentions ? { mentions } : {}), ...(custom ? { custom } : {}), ...(orderNeutral ? { orderNeutral } : {}),
    });
    if (ephemeral) return this.sendTransient(k, tenant, group, sender, messageId, rest);
    const outcome = await this.writer.submit(k, { clientMessageId: uuidToHex(clientMessageId), sender: uuidToHex(sender), rest });
    return { tenant, group, ...outcome };
  }

  /**
   * An ephemeral type's message (spec 003 §2.1): never stored, no seq, no mailbox entry, no list
   * change: the sender must be an ACTIVE member of a group that is not dissolved (one read), then
   * it goes to the devices of the members online now (onTransient: core/delivery). At most once;
   * its SEND answers conversation_seq 0.
   */
  private async sendTransient(k: ConversationKeys, tenant: Uuid, group: Uuid, sender: Uuid, messageId: Uuid, rest: string): Promise<SendResult> {
    const res = await this.clientOf(k).pipeline().hget(k.grpmembers, uuidToHex(sender)).hget(k.grpmeta, "dissolved_at").exec();
    const member = res?.[0]?.[1];
    const dissolved = res?.[1]?.[1];
    if (typeof dissolved === "string") throw groupDissolvedError(group, Number(dissolved));
    if (typeof member !== "string" || parseMemberValue(uuidToHex(sender), member).state !== "ACTIVE") throw new PermissionDeniedError();
    if (!this.opts.onTransient) throw new FailedPreconditionError("this engine delivers no ephemeral messages (no delivery module)");
    // the entry a log would hold at its seq: a transient message's is TRANSIENT_SEQ
    await this.opts.onTransient({ tenant, conversation: group, conversationSeq: TRANSIENT_SEQ, entry: `${TRANSIENT_SEQ}|${rest}`, createdAt: this.opts.now() });
    return { tenant, group, conversationSeq: TRANSIENT_SEQ, messageId, version: null, duplicate: false, attempts: 1, ephemeral: true };
  }

  /**
   * The declaration a custom type's send applies, from one registry snapshot (one version whole),
   * with that version; refuses what the declaration refuses (INVALID_ARGUMENT naming it).
   */
  private declarationOf(snapshot: RegistrySnapshot | null, contentType: string, payloadBytes: number) {
    const refuse = (reason: string, err: Error): never => {
      registryMetrics.refused.inc({ reason });
      throw err;
    };
    if (contentType.startsWith(RESERVED_PREFIX)) refuse("reserved", new InvalidArgumentError("contentType", `${contentType}: the ${RESERVED_PREFIX}* types are the engine's own events, not sent by users`));
    const d = snapshot?.types.get(contentType);
    if (!snapshot || !d) {
      return refuse("unknown_type", new InvalidArgumentError("contentType", `${contentType} is not a message type of this tenant: declare it first (qimctl registry apply), or send a MIME type (with a "/")`));
    }
    if (d.deliveryClass === "ephemeral_aggregate") {
      refuse("class_unavailable", new FailedPreconditionError(`${contentType} is declared ephemeral_aggregate: its messages are aggregates (reactions, spec 003 §4), not sends (docs/operator-guide.md "Message types")`, { customType: contentType, deliveryClass: d.deliveryClass }));
    }
    if (payloadBytes > d.maxPayloadBytes) {
      refuse("payload_too_large", new InvalidArgumentError("payload", `a ${contentType} payload is at most ${d.maxPayloadBytes} bytes (its max_payload_bytes in the tenant's registry, version ${snapshot.version}); this one is ${payloadBytes}`));
    }
    return d;
  }

  /**
   * Recalls a message (spec 003 §2.3): its author within recall_self_window (`user`), or a
   * moderator without window (no `user`, a `reason` for the audit). The event first, then the
   * target's state (core/conversation/anchor.ts). A second recall answers the first's event.
   */
  async recall(req: { tenant: string; group: string; seq: number; user?: string; reason?: string }): Promise<AnchorResult> {
    const tenant = parseUuid(req.tenant, "tenant");
    const group = parseUuid(req.group, "group");
    const seq = positiveInt(req.seq, "seq", 1);
    const user = req.user === undefined ? null : parseUuid(req.user, "user");
    if (user === null) parseModerationReason(req.reason);
    return writeAnchorEvent(this.store, this.conversationKeys(tenant, group), {
      mode: "recall", tenant, group, targetSeq: seq, actor: user, payload: new Uint8Array(0), clientMessageId: null, nowMs: this.opts.now(), ...this.commitHook(),
      rxwho: reactionWhoKey(this.keys, tenant, group, seq),
    });
  }

  /**
   * Edits a message (spec 003 §2.3): its author within edit_self_window, or a moderator with a
   * reason. The new payload travels in the edit event (devices offline get it from the log) and
   * replaces the target's. Idempotent by clientMessageId like a send.
   */
  async edit(req: { tenant: string; group: string; seq: number; user?: string; reason?: string; text?: string; payload?: Uint8Array; clientMessageId?: string }): Promise<AnchorResult> {
    const tenant = parseUuid(req.tenant, "tenant");
    const group = parseUuid(req.group, "group");
    const seq = positiveInt(req.seq, "seq", 1);
    const user = req.user === undefined ? null : parseUuid(req.user, "user");
    if (user === null) parseModerationReason(req.reason);
    let payload: Uint8Array;
    if (req.text !== undefined) {
      if (typeof req.text !== "string" || req.text.length === 0) throw new InvalidArgumentError("text", "text must not be empty");
      payload = Buffer.from(req.text, "utf8");
    } else if (req.payload !== undefined) {
      payload = req.payload;
    } else {
      throw new InvalidArgumentError("text", "an edit needs the new text or payload");
    }
    if (payload.length > this.opts.maxPayloadBytes) throw new InvalidArgumentError("payload", `a message payload is at most ${this.opts.maxPayloadBytes} bytes`);
    const clientMessageId = uuidToHex(req.clientMessageId === undefined ? newUuid() : parseUuid(req.clientMessageId, "clientMessageId"));
    const k = this.conversationKeys(tenant, group);
    // a custom type's message keeps its declaration's payload limit through an edit: the target is
    // read (its content type) only when some type of the tenant has a limit this payload passes
    const types = this.opts.messageTypes ? (await this.opts.messageTypes(tenant)).types : null;
    const tight = types !== null && [...types.values()].some((d) => d.maxPayloadBytes < payload.length);
    const target = tight ? (await this.clientOf(k).zrangebyscore(k.hist, seq, seq))[0] : undefined;
    const ct = target === undefined ? undefined : decodeHistoryParts(target).fields.get(HIST_FIELD.contentType);
    if (ct !== undefined && isCustomType(ct)) {
      const max = types!.get(ct)?.maxPayloadBytes;
      if (max !== undefined && payload.length > max) {
        registryMetrics.refused.inc({ reason: "payload_too_large" });
        throw new InvalidArgumentError("payload", `a ${ct} payload is at most ${max} bytes (its max_payload_bytes in the tenant's registry); this one is ${payload.length}`);
      }
    }
    return writeAnchorEvent(this.store, k, {
      mode: "edit", tenant, group, targetSeq: seq, actor: user, payload, clientMessageId, nowMs: this.opts.now(), ...this.commitHook(),
      rxwho: reactionWhoKey(this.keys, tenant, group, seq),
    });
  }

  private commitHook(): { onCommit?: (bucket: number) => void } {
    return this.opts.onCommit ? { onCommit: this.opts.onCommit } : {};
  }

  private parseMentions(mentions: unknown): Uuid[] {
    if (!Array.isArray(mentions)) throw new InvalidArgumentError("mentions", "mentions must be a list of user ids");
    const distinct = [...new Set(mentions.map((u, i) => parseUuid(u, `mentions[${i}]`)))].sort();
    if (distinct.length > MAX_MENTIONS) throw new InvalidArgumentError("mentions", `a message mentions at most ${MAX_MENTIONS} users`);
    return distinct;
  }

  /** History as `user` sees it; PERMISSION_DENIED alike for never-members and missing groups. */
  async history(req: { tenant: string; group: string; user: string; after?: number; limit?: number }): Promise<HistoryPage> {
    const tenant = parseUuid(req.tenant, "tenant");
    const group = parseUuid(req.group, "group");
    const user = parseUuid(req.user, "user");
    const after = req.after === undefined ? 0 : positiveInt(req.after, "after");
    const limit = req.limit === undefined ? HISTORY_PAGE_DEFAULT : positiveInt(req.limit, "limit", 1);
    if (limit > HISTORY_PAGE_LIMIT) throw new InvalidArgumentError("limit", `limit is at most ${HISTORY_PAGE_LIMIT}`);
    const k = this.conversationKeys(tenant, group);
    // a cleared or deleted conversation shows nothing at or below its watermark (spec 002 §7)
    const [w] = await this.watermarksOf(tenant, user, [group]);
    const floor = Math.max(w!.hiddenBefore, w!.deletedBefore);
    const reply = await readHistoryScript.run(this.clientOf(k), k, { user: uuidToHex(user), after: Math.max(after, floor), limit });
    if (reply.status === "NOT_VISIBLE") throw new PermissionDeniedError();
    return {
      joinedAt: reply.interval.joinedAt,
      leftAt: reply.interval.leftAt,
      state: STATE[reply.interval.state]!,
      earliestAvailableConversationSeq: Math.max(reply.earliestAvailableConversationSeq, floor + 1),
      records: reply.entries.map(decodeHistoryEntry),
    };
  }

  /**
   * What an operator is told when a call made as `user` (a send, a conversation action) was refused
   * with the user path's PERMISSION_DENIED. ADR-0021 §3 makes "never a member" and "no such group"
   * alike for a user; an operator sees both anyway (group show, membership list), so this says
   * which: NOT_FOUND when the group does not exist, FAILED_PRECONDITION (reason NOT_A_MEMBER) when
   * the user is not a current member; `denied` itself when neither holds (the state moved since).
   */
  async operatorRefusal(tenantIn: string, groupIn: string, userIn: string, field: string, denied: Error): Promise<Error> {
    const tenant = parseUuid(tenantIn, "tenant");
    const group = parseUuid(groupIn, "group");
    const user = parseUuid(userIn, field);
    const k = this.conversationKeys(tenant, group);
    const res = await this.clientOf(k).multi().hget(k.grpmeta, "version").hget(k.grpmembers, uuidToHex(user)).exec();
    if (res?.[0]?.[1] == null) return new NotFoundError("group", group);
    const raw = res[1]?.[1];
    const m = typeof raw === "string" ? parseMemberValue(uuidToHex(user), raw) : null;
    if (m?.state === "ACTIVE") return denied;
    const was = m === null ? "never was one" : `${m.state === "LEFT" ? "left" : "removed"} at conversation_seq ${m.leftAt}`;
    return new FailedPreconditionError(`user ${user} is not a member of group ${group} (${was})`, { field, reason: "NOT_A_MEMBER" });
  }

  /**
   * One page of a group's member table with the intervals: an HSCAN step of COUNT `limit` (at most
   * REDIS_CALL_MEMBER_BUDGET), so no call reads more than a bounded number of members however big
   * the group (issue 22). The cursor is Redis's HSCAN cursor as a decimal string ("" or absent:
   * from the start; nextCursor "" after the last page). HSCAN's guarantee is the listing's:
   * every member present for the whole listing is on some page (at least once: a member may show
   * on two pages when Redis rehashed the table meanwhile); a page holds no repeat, is in user-id
   * order, and may hold fewer than `limit` (even none, with a cursor to go on) or, for a table
   * small enough that Redis keeps it compact (hash-max-listpack-entries), all of it at once.
   *
   * The admin path (`asUser` absent) sees everyone who ever was a member. A user may list only
   * while a current member (one HGET of their own entry first, never a scan) and sees current
   * members only.
   */
  async listMembers(req: ListMembersRequest): Promise<MemberPage> {
    const tenant = parseUuid(req.tenant, "tenant");
    const group = parseUuid(req.group, "group");
    const asUser = req.asUser === undefined ? undefined : parseUuid(req.asUser, "asUser");
    const limit = req.limit === undefined ? REDIS_CALL_MEMBER_BUDGET : positiveInt(req.limit, "limit", 1);
    if (limit > REDIS_CALL_MEMBER_BUDGET) throw new InvalidArgumentError("limit", `limit is at most ${REDIS_CALL_MEMBER_BUDGET}`);
    const cursor = req.cursor === undefined || req.cursor === "" ? "0" : req.cursor;
    if (!MEMBER_CURSOR.test(cursor)) throw new InvalidArgumentError("cursor", "cursor is not one this listing gave");
    const k = this.conversationKeys(tenant, group);
    const client = this.clientOf(k);
    if (asUser !== undefined) {
      const [exists, own] = await Promise.all([client.exists(k.grpmeta), client.hget(k.grpmembers, uuidToHex(asUser))]);
      if (exists === 0 || own === null || parseMemberValue(uuidToHex(asUser), own).state !== "ACTIVE") throw new PermissionDeniedError();
    }
    const res = await client.multi().hmget(k.grpmeta, "version", "member_count").hscan(k.grpmembers, cursor, "COUNT", limit).exec();
    const [version, count] = res![0]![1] as (string | null)[];
    if (version == null) {
      if (asUser !== undefined) throw new PermissionDeniedError();
      throw new NotFoundError("group", group);
    }
    const [next, flat] = res![1]![1] as [string, string[]];
    const page = new Map<string, Member>();
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const m = parseMemberValue(flat[i]!, flat[i + 1]!);
      if (asUser === undefined || m.state === "ACTIVE") page.set(m.userId, m);
    }
    const members = [...page.values()].sort((a, b) => (a.userId < b.userId ? -1 : a.userId > b.userId ? 1 : 0));
    return { version: Number(version), memberCount: Number(count ?? 0), members, nextCursor: next === "0" ? "" : next };
  }

  /** The session head and definitional unread of one group for one user (spec 002 §3.1). */
  async conversationSummary(req: { tenant: string; group: string; user: string }): Promise<ConversationSummary> {
    const tenant = parseUuid(req.tenant, "tenant");
    const group = parseUuid(req.group, "group");
    const user = parseUuid(req.user, "user");
    const k = this.conversationKeys(tenant, group);
    const [w] = await this.watermarksOf(tenant, user, [group]);
    const reply = await conversationSummaryScript.run(this.clientOf(k), k, { user: uuidToHex(user), unreadPreciseLimit: this.opts.unreadPreciseLimit, ...w! });
    const summary = this.summaryOf(tenant, group, user, reply);
    if (!summary) throw new PermissionDeniedError();
    return summary;
  }

  /**
   * Summaries of many groups for one user in one round trip (one pipeline per instance, spec 002
   * §2.2); null where the user may not see the group (never a member, or no such group). `known`:
   * the user's clear/delete watermarks of each group when the caller has them (else read once).
   */
  async conversationSummaries(tenant: Uuid, user: Uuid, groups: readonly Uuid[], known?: readonly ContentWatermarks[]): Promise<(ConversationSummary | null)[]> {
    const userHex = uuidToHex(user);
    const keys = groups.map((g) => this.conversationKeys(tenant, g));
    const out: (ConversationSummary | null)[] = new Array(groups.length).fill(null);
    // a caller that holds the user's watermarks already (the list's rows carry them) saves the read
    const watermarks = known ?? (await this.watermarksOf(tenant, user, groups));
    await Promise.all(this.store.byTarget(keys.map((k) => k.tag)).map(async ({ client, idx }) => {
      const p = client.pipeline();
      for (const i of idx) {
        const k = keys[i]!;
        conversationSummaryScript.queue(p, k, { user: userHex, unreadPreciseLimit: this.opts.unreadPreciseLimit, ...watermarks[i]! });
      }
      const res = (await p.exec()) ?? [];
      res.forEach(([err, reply], j) => {
        if (err) throw err;
        out[idx[j]!] = this.summaryOf(tenant, groups[idx[j]!]!, user, conversationSummaryScript.decode(reply));
      });
    }));
    return out;
  }

  /**
   * One user's entry in the member table of each group (state and interval), in one round trip
   * (one pipeline per instance); null where the table has no entry for the user (never a member,
   * or no such group).
   */
  async memberEntries(tenant: Uuid, user: Uuid, groups: readonly Uuid[]): Promise<(Member | null)[]> {
    const userHex = uuidToHex(user);
    const keys = groups.map((g) => this.conversationKeys(tenant, g));
    const out: (Member | null)[] = new Array(groups.length).fill(null);
    await Promise.all(this.store.byTarget(keys.map((k) => k.tag)).map(async ({ client, idx }) => {
      const p = client.pipeline();
      for (const i of idx) p.hget(keys[i]!.grpmembers, userHex);
      const res = (await p.exec()) ?? [];
      res.forEach(([err, raw], j) => {
        if (err) throw err;
        if (typeof raw === "string") out[idx[j]!] = parseMemberValue(userHex, raw);
      });
    }));
    return out;
  }

  /**
   * Whether each user is an ACTIVE member of a group that is not dissolved, now (one pipeline: the
   * users' member entries and the group's dissolved_at): who may take part in what is never stored
   * (typing, a call's signals).
   */
  async activeMembers(tenant: Uuid, group: Uuid, users: readonly Uuid[]): Promise<boolean[]> {
    const k = this.conversationKeys(tenant, group);
    const p = this.clientOf(k).pipeline();
    p.hget(k.grpmeta, "dissolved_at");
    for (const u of users) p.hget(k.grpmembers, uuidToHex(u));
    const res = (await p.exec()) ?? [];
    for (const [err] of res) if (err) throw err;
    if (res[0]?.[1] !== null && res[0]?.[1] !== undefined) return users.map(() => false);
    return users.map((u, i) => {
      const raw = res[i + 1]?.[1];
      return typeof raw === "string" && parseMemberValue(uuidToHex(u), raw).state === "ACTIVE";
    });
  }

  private async watermarksOf(tenant: Uuid, user: Uuid, groups: readonly Uuid[]): Promise<readonly ContentWatermarks[]> {
    if (!this.opts.watermarks || groups.length === 0) return groups.map(() => NO_CONTENT_WATERMARKS);
    return this.opts.watermarks(tenant, user, groups);
  }

  private summaryOf(tenant: Uuid, group: Uuid, user: Uuid, reply: SummaryReply): ConversationSummary | null {
    if (reply.status === "NOT_VISIBLE") return null;
    return {
      tenant, group, userId: user,
      joinedAt: reply.interval.joinedAt,
      leftAt: reply.interval.leftAt,
      state: STATE[reply.interval.state]!,
      readConversationSeq: reply.readConversationSeq,
      head: reply.headEntry === null ? null : decodeHistoryEntry(reply.headEntry),
      unread: reply.unread,
      unreadExact: reply.unreadExact,
    };
  }

  /** Moves the user's read_conversation_seq forward (never back), clamped to the visible head. */
  async markRead(req: { tenant: string; group: string; user: string; seq: number }): Promise<{ readConversationSeq: number }> {
    const tenant = parseUuid(req.tenant, "tenant");
    const group = parseUuid(req.group, "group");
    const user = parseUuid(req.user, "user");
    const seq = positiveInt(req.seq, "seq");
    const k = this.conversationKeys(tenant, group);
    const reply = await markReadScript.run(this.clientOf(k), k, { user: uuidToHex(user), seq });
    if (reply.status === "NOT_VISIBLE") throw new PermissionDeniedError();
    await this.opts.onRead?.({ tenant, group, user, readConversationSeq: reply.readConversationSeq });
    return { readConversationSeq: reply.readConversationSeq };
  }
}
