import { commitBucket, GLOBAL_TAG, partitionTag, userTag, uuidToHex, type KeySpace, type Uuid } from "../base/index.js";

/**
 * A user's session keys (spec 002 §2.2, ADR-0021 §4), all on the user's `{uNNN}` tag:
 * the projection `convs` (zset: conversation hex → created_at ms of its latest message, written
 * with ZADD GT), the bucket's pending-registration queue and epoch marks, and the Redis-hash
 * authority of the development fallback.
 */
export interface UserKeys {
  bucket: number;
  tag: string;
  /** tenant:user in hex: the user's field in the bucket's epoch-mark hash. */
  ref: string;
  convs: string;
  ucsPending: string;
  epochMarks: string;
  ucsHash: string;
}

export function userKeys(space: KeySpace, tenant: Uuid, user: Uuid): UserKeys {
  const bucket = commitBucket(tenant, user);
  const tag = userTag(bucket);
  const ref = `${uuidToHex(tenant)}:${uuidToHex(user)}`;
  return {
    bucket,
    tag,
    ref,
    convs: space.key(tag, "convs", ref),
    ucsPending: ucsPendingKey(space, bucket),
    epochMarks: epochMarksKey(space, bucket),
    ucsHash: space.key(tag, "ucs", ref),
  };
}

/** A user bucket's queue of (tenant, user, conversation, kind, created_at) awaiting the authority. */
export function ucsPendingKey(space: KeySpace, bucket: number): string {
  return space.key(userTag(bucket), "session_projection:ucs_pending");
}

/**
 * A user bucket's dead letters: pending registrations that could not be decoded, moved here by
 * the registration task so they stop blocking the queue (capped; for an operator to inspect).
 */
export function ucsDeadKey(space: KeySpace, bucket: number): string {
  return space.key(userTag(bucket), "session_projection:ucs_dead");
}

/** A user bucket's hash: tenant:user → the projection epoch that user's list was last rebuilt at. */
export function epochMarksKey(space: KeySpace, bucket: number): string {
  return space.key(userTag(bucket), "epoch_marks");
}

/** Pattern matching every user's projection zset (drills sample users with SCAN over it). */
export function convsPattern(space: KeySpace): string {
  return `${space.prefix}:{u*}:convs:*`;
}

/** session_projection:epoch (ADR-0021 §4). */
export function projectionEpochKey(space: KeySpace): string {
  return space.key(GLOBAL_TAG, "session_projection:epoch");
}

/** The newest bumps of the epoch, newest first (JSON entries: epoch, reason, by, at). */
export function projectionEpochLogKey(space: KeySpace): string {
  return space.key(GLOBAL_TAG, "session_projection:epoch_log");
}

/** Held by the one rebuild drill running against this engine (token = drill id, expires). */
export function drillLockKey(space: KeySpace): string {
  return space.key(GLOBAL_TAG, "drill:lock");
}

/** The projection consumer's checkpoint of one partition, bound to the log's identity. */
export function checkpointKey(space: KeySpace, topic: string, partition: number): string {
  return space.key(partitionTag(partition), "ckpt", `${topic}:${partition}`);
}
