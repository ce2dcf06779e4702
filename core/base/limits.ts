/**
 * Per-call limits that a caller must know to stay within them (docs/architecture.md "Per-call
 * limits"). Here, in base, because the CLI splits its bulk changes by them and may import only
 * base (test/layout/imports.test.ts): the engine's defaults and the CLI read the one value.
 */

/** The most distinct users one add/remove call may name (ChangeMembersRequest.users). */
export const MAX_USERS_PER_MEMBERSHIP_CALL = 1000;
