import { commitBucket, partitionTag, userTag, uuidToHex, type KeySpace, type Uuid } from "../base/index.js";

/**
 * A user's conversation-list keys (spec 002 §3–§8), all on the user's `{uNNN}` tag (the same tag
 * as the session projection's `convs`), so one script sees the rows, the badge, the user's choices
 * and the version together:
 *   rows     hash  conversation hex → row (UserSessionProjection: cached unread, mentions, head…)
 *   badge    hash  total_unread, total_mention, muted_unread (UserBadgeState)
 *   prefs    hash  conversation hex → "hidden|deleted|pin|muted|archived": the user's own choices,
 *                  not a projection row — a rebuild (J-6) reads them, a wipe keeps them
 *   version  string  the per-user projection version (§5.1's projection_mailbox_seq role), never wiped
 *   reconciled  string (expiring)  a bounded reconcile trigger ran lately (one key per trigger)
 */
export interface ListKeys {
  tag: string;
  rows: string;
  badge: string;
  prefs: string;
  version: string;
  /** string with an expiry: a reconcile for `trigger` ran within RECONCILE_MIN_INTERVAL_MS (the per-user bound of §3.4's triggers). */
  reconciled: (trigger: string) => string;
}

export function listKeys(space: KeySpace, tenant: Uuid, user: Uuid): ListKeys {
  const tag = userTag(commitBucket(tenant, user));
  const ref = `${uuidToHex(tenant)}:${uuidToHex(user)}`;
  return {
    tag,
    rows: space.key(tag, "clrows", ref),
    badge: space.key(tag, "clbadge", ref),
    prefs: space.key(tag, "clprefs", ref),
    version: space.key(tag, "clversion", ref),
    reconciled: (trigger) => space.key(tag, "clrecon", `${trigger}:${ref}`),
  };
}

/** Pattern matching every user's row hash (the audit samples users with SCAN over it). */
export function listRowsPattern(space: KeySpace): string {
  return `${space.prefix}:{u*}:clrows:*`;
}

/** The list consumer's checkpoint of one dispatch-log partition ("offset|streamId"). */
export function listCheckpointKey(space: KeySpace, topic: string, partition: number): string {
  return space.key(partitionTag(partition), "clckpt", `${topic}:${partition}`);
}
