import type { ConversationStateAuthority } from "./authority.js";
import { NO_CONTENT_WATERMARKS, type ConversationService, type ConversationSummary, type MemberState } from "../conversation/index.js";
import type { KeySpace } from "../base/index.js";
import type { RedisStore } from "../store/index.js";
import { userKeys } from "./keys.js";
import { raiseEpochMarkScript } from "./scripts.js";
import type { ProjectionEpoch } from "./epoch.js";
import { InvalidArgumentError, SESSION_PAGE_DEFAULT, SESSION_PAGE_LIMIT } from "../base/index.js";
import { hexToUuid, parseUuid, uuidToHex, type Uuid } from "../base/index.js";
import { metrics } from "./metrics.js";

export interface UserSessionPageRequest {
  tenant: string;
  user: string;
  /** Conversations per page (session_list_page_limit); default 50, at most 200. */
  limit?: number;
  /** Every conversation of the user, in pages of 500 internally (drills; ≤ 5,000 per user). */
  all?: boolean;
}

export interface UserSessionPage {
  tenant: Uuid;
  user: Uuid;
  /** The projection epoch the list was served at. */
  epoch: number;
  /** True when this pull merged the user's set back from the authority first. */
  rebuilt: boolean;
  /** Conversations in the user's projection. */
  total: number;
  /** The page: last_activity_id DESC, then conversation_id ASC (spec 002 §2.2, §6.9.3). */
  sessions: ConversationSummary[];
  /** Conversations of the page the user may not see (no interval for them; normally 0). */
  hidden: number;
}

/** Groups per ListUserGroups page: at most this many, USER_GROUPS_PAGE_DEFAULT when not given. */
export const USER_GROUPS_PAGE_LIMIT = 5000;
export const USER_GROUPS_PAGE_DEFAULT = 1000;

export interface UserGroup {
  group: Uuid;
  joinedAt: number;
  leftAt: number | null;
  state: MemberState;
}

export interface UserGroupsPage {
  tenant: Uuid;
  user: Uuid;
  /** By group id; only groups whose member table has an entry for the user. */
  groups: UserGroup[];
  /** Set when more groups follow: the `after` of the next page. */
  nextAfter: Uuid | null;
  /** Conversations in the user's set (projection ∪ authority), all pages together. */
  conversations: number;
}

/** last_activity_id DESC (the head's UUIDv7 message id; no head sorts last), then conversation_id ASC. */
export function compareSessions(a: ConversationSummary, b: ConversationSummary): number {
  const la = a.head?.messageId ?? "";
  const lb = b.head?.messageId ?? "";
  if (la !== lb) return la < lb ? 1 : -1;
  return a.group < b.group ? -1 : a.group > b.group ? 1 : 0;
}

/**
 * The user session projection (spec 002 §2.2 UserSessionProjection; not the conversation list of
 * core/conversation-list nor its session view): one page from `convs:{user}`, the head and the
 * definitional unread of each conversation in one pipelined round trip, exact order. Before the
 * read, a user whose epoch mark is behind the projection epoch gets their set merged back from
 * the authority with ZADD GT (ADR-0021 §4: per user, lazily, never a table scan).
 */
export class UserSessionProjection {
  /**
   * Called after a user's set was rebuilt from the authority (the epoch moved past their mark): the
   * runtime maps it to spec 002 §3.4's MAILBOX_DIRTY and reconciles the user's conversation list.
   */
  onUserRebuilt: ((tenant: Uuid, user: Uuid) => void) | null = null;

  constructor(
    private readonly store: RedisStore,
    private readonly keys: KeySpace,
    private readonly conversations: ConversationService,
    readonly authority: ConversationStateAuthority,
    readonly epoch: ProjectionEpoch,
  ) {}

  private userKeys(tenant: Uuid, user: Uuid) {
    return userKeys(this.keys, tenant, user);
  }

  /** Rebuilds the user's set from the authority when their mark is behind (or `force`). */
  async rebuildUser(tenantIn: string, userIn: string, opts: { force?: boolean } = {}): Promise<{ epoch: number; rebuilt: boolean; merged: number; mark: number }> {
    const tenant = parseUuid(tenantIn, "tenant");
    const user = parseUuid(userIn, "user");
    const k = this.userKeys(tenant, user);
    const [epoch, markRaw] = await Promise.all([this.epoch.get(), this.store.clientFor(k.tag).hget(k.epochMarks, k.ref)]);
    const mark = Number(markRaw ?? "0");
    if (!opts.force && mark >= epoch) return { epoch, rebuilt: false, merged: 0, mark };
    const merged = await this.mergeFromAuthority(tenant, user, epoch);
    return { epoch, rebuilt: true, merged, mark: Math.max(mark, epoch) };
  }

  /** Merges the authority's set into the projection with ZADD GT and raises the mark to `epoch`. */
  private async mergeFromAuthority(tenant: Uuid, user: Uuid, epoch: number): Promise<number> {
    const k = this.userKeys(tenant, user);
    const rows = await this.authority.conversations(tenant, user);
    const p = this.store.clientFor(k.tag).multi();
    for (let i = 0; i < rows.length; i += 500) {
      const slice = rows.slice(i, i + 500);
      // the score is the newest activity the user may see (issue 12): first_seen_at would rank a
      // user with more conversations than a page by when each first appeared, and page 1 would
      // hold the wrong ones; first_seen_at stays only where the user sees no record at all
      // ranking, not content: a cleared or deleted conversation keeps the place its last activity
      // gives it (spec 002 §7 hides content, not the row's order), so no watermarks here
      const heads = await this.conversations.conversationSummaries(tenant, user, slice.map((r) => r.conversation), slice.map(() => NO_CONTENT_WATERMARKS));
      const args: (string | number)[] = [];
      for (const [j, r] of slice.entries()) args.push(heads[j]?.head?.createdAt ?? r.firstSeenAt, uuidToHex(r.conversation));
      p.zadd(k.convs, "GT", ...(args as [number, string]));
    }
    // the mark only moves forward: a slower rebuild at an older epoch must not undo a newer one
    raiseEpochMarkScript.queue(p, k, { ref: k.ref, epoch });
    const res = await p.exec();
    for (const [err] of res ?? []) if (err) throw err;
    metrics.userRebuilt.inc();
    this.onUserRebuilt?.(tenant, user);
    return rows.length;
  }

  async listSessions(req: UserSessionPageRequest): Promise<UserSessionPage> {
    const tenant = parseUuid(req.tenant, "tenant");
    const user = parseUuid(req.user, "user");
    const limit = req.limit ?? SESSION_PAGE_DEFAULT;
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > SESSION_PAGE_LIMIT) {
      throw new InvalidArgumentError("limit", `limit must be an integer from 1 to ${SESSION_PAGE_LIMIT}`);
    }
    const k = this.userKeys(tenant, user);
    const client = this.store.clientFor(k.tag);
    // the mark and the page in one round trip on the user's instance, the epoch beside it (cached
    // for EPOCH_CACHE_MS: not a read of {g000} per pull); the page is read again only in the rare
    // pull that rebuilds
    const readPage = () => client.multi().hget(k.epochMarks, k.ref).zcard(k.convs).zrevrange(k.convs, 0, req.all ? -1 : limit - 1).exec();
    const [epoch, first] = await Promise.all([this.epoch.current(), readPage()]);
    let page = first;
    const rebuilt = Number(page![0]![1] ?? "0") < epoch;
    if (rebuilt) {
      await this.mergeFromAuthority(tenant, user, epoch);
      page = await readPage();
    }
    const total = page![1]![1] as number;
    const groups = (page![2]![1] as string[]).map(hexToUuid);
    const summaries: (ConversationSummary | null)[] = [];
    for (let i = 0; i < groups.length; i += 500) {
      summaries.push(...(await this.conversations.conversationSummaries(tenant, user, groups.slice(i, i + 500))));
    }
    const sessions = summaries.filter((s): s is ConversationSummary => s !== null).sort(compareSessions);
    const hidden = summaries.length - sessions.length;
    if (hidden > 0) metrics.groupIntervalMissing.inc(hidden);
    return { tenant, user, epoch, rebuilt, total, sessions, hidden };
  }

  /**
   * The groups a user is or was in, with their state and interval (ADR-0021 §2), a page at a time
   * by group id. The user's conversations are those of their projection (`convs`) and of the
   * authority together, so a projection lost and not yet rebuilt hides none the authority has; each
   * is then read from its group's member table, which holds the state and the interval. Writes
   * nothing (no rebuild, no epoch mark).
   *
   * Not seen: a group the user was put in at its creation and that has had no message since
   * (creation writes no control message, so nothing was dispatched to the user yet).
   */
  async userGroups(req: { tenant: string; user: string; after?: string; limit?: number }): Promise<UserGroupsPage> {
    const tenant = parseUuid(req.tenant, "tenant");
    const user = parseUuid(req.user, "user");
    const after = req.after ? parseUuid(req.after, "after") : undefined;
    const limit = req.limit ?? USER_GROUPS_PAGE_DEFAULT;
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > USER_GROUPS_PAGE_LIMIT) {
      throw new InvalidArgumentError("limit", `limit must be an integer from 1 to ${USER_GROUPS_PAGE_LIMIT}`);
    }
    const k = this.userKeys(tenant, user);
    const [projected, registered] = await Promise.all([this.store.clientFor(k.tag).zrevrange(k.convs, 0, -1), this.authority.conversations(tenant, user)]);
    const all = [...new Set([...projected.map(hexToUuid), ...registered.map((r) => r.conversation)])].sort();
    const rest = after === undefined ? all : all.filter((g) => g > after);
    const page = rest.slice(0, limit);
    const entries = await this.conversations.memberEntries(tenant, user, page);
    const groups: UserGroup[] = [];
    entries.forEach((m, i) => {
      if (m) groups.push({ group: page[i]!, joinedAt: m.joinedAt, leftAt: m.leftAt, state: m.state });
    });
    return { tenant, user, groups, nextAfter: rest.length > page.length ? page.at(-1)! : null, conversations: all.length };
  }

  /** How many conversations the user's session projection holds (ZCARD of convs): what a slot's owner holds for the user (NodeService.DescribeUser). */
  async conversationCount(tenant: Uuid, user: Uuid): Promise<number> {
    const k = this.userKeys(tenant, user);
    return this.store.clientFor(k.tag).zcard(k.convs);
  }

  /** Drops the user's projection and epoch mark (drills: "the projection was lost"). */
  async wipeUser(tenant: Uuid, user: Uuid): Promise<void> {
    const k = this.userKeys(tenant, user);
    await this.store.clientFor(k.tag).multi().del(k.convs).hdel(k.epochMarks, k.ref).exec();
  }
}
