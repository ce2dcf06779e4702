/**
 * Per-call limits that a caller must know to stay within them (docs/architecture.md "Per-call
 * limits"). Here, in base, because the CLI splits its bulk changes by them and may import only
 * base (test/layout/imports.test.ts): the engine's defaults and the CLI read the one value.
 */

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
