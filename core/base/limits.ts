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

/** spec 001 (WuKongIM app.go): a CMD sync that names no limit (0) answers at most this many messages. */
export const CMD_SYNC_DEFAULT_LIMIT = 200;
/** spec 001: the most messages one CMD sync answers (or pending views one look lists); a bigger limit is capped to it. */
export const CMD_SYNC_MAX_LIMIT = 10_000;
/** Rows per conversation-list page: the default and the most (`session_list_page_limit`, spec 002 §2.2). */
export const SNAPSHOT_PAGE = { default: 50, max: 200 } as const;
/** The session projection's page (ListConversationSummaries without groups, phase 1): the default and the most, as the list's (spec 002 §2.2). */
export const SESSION_PAGE_DEFAULT = SNAPSHOT_PAGE.default;
export const SESSION_PAGE_LIMIT = SNAPSHOT_PAGE.max;
/** The most groups one ListConversationSummaries call may name (one summary read each). */
export const SUMMARY_GROUPS_MAX = 100;
/** Epoch bumps one GetEpoch call returns: default and most. */
export const EPOCH_HISTORY_LIMIT = { default: 10, max: 100 } as const;

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
