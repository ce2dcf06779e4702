/**
 * Per-call limits that a caller must know to stay within them (docs/architecture.md "Per-call
 * limits"). Here, in base, because the CLI splits its bulk changes by them and may import only
 * base (test/layout/imports.test.ts): the engine's defaults and the CLI read the one value.
 */

/** The most distinct users one add/remove call may name (ChangeMembersRequest.users). */
export const MAX_USERS_PER_MEMBERSHIP_CALL = 1000;

/**
 * The default of groups.max_members, the most current (ACTIVE) members a group may have: issue 22
 * asks that 1,000,000 work (member reads page, fanout runs in budgeted chunks) and that the limit
 * be stated, so a group cannot grow past what was measured.
 */
export const DEFAULT_MAX_GROUP_MEMBERS = 1_000_000;

/**
 * Members or recipients one Redis call may read or write. Redis runs one command or script at a
 * time: at ~1 µs per member a call stays around a millisecond, so PINGs, heartbeats and small
 * groups' sends wait at most that long behind it (issue 22: an HGETALL of a 1,000,000-member
 * group blocked Redis for 3.1 s and the node lost its leases). Work over more members is cut into
 * calls of at most this many.
 */
export const REDIS_CALL_MEMBER_BUDGET = 1000;
