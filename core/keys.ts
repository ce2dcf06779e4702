import { bucketTag, commitBucket, GLOBAL_TAG, partitionTag, userTag } from "./bucket.js";
import { uuidToHex, type Uuid } from "./ids.js";

/**
 * Every key of one conversation (a group's conversation id is the group id) — the sequence
 * counter, history, commit records, idempotency index, group meta, member table, version deltas,
 * read state — carries the conversation's `{bNNN}` tag, so one Lua script sees all of them on one
 * instance (ADR-0021 §1). The bucket's outbox carries the same tag. docs/architecture.md has the
 * table of keys.
 */
export interface ConversationKeys {
  bucket: number;
  tag: string;
  /** tenant|conversation in hex: the conversation's name inside the bucket's outbox entries. */
  outboxRef: string;
  cseq: string;
  hist: string;
  commits: string;
  idem: string;
  grpmeta: string;
  grpmembers: string;
  grpdeltas: string;
  vpending: string;
  readseq: string;
  outbox: string;
}

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

export class KeySpace {
  constructor(readonly prefix: string = "qim") {}

  conversation(tenant: Uuid, conversation: Uuid): ConversationKeys {
    const bucket = commitBucket(tenant, conversation);
    const tag = bucketTag(bucket);
    const id = `${uuidToHex(tenant)}:${uuidToHex(conversation)}`;
    const k = (name: string) => `${this.prefix}:${tag}:${name}:${id}`;
    return {
      bucket,
      tag,
      outboxRef: `${uuidToHex(tenant)}|${uuidToHex(conversation)}`,
      cseq: k("cseq"),
      hist: k("hist"),
      commits: k("commits"),
      idem: k("idem"),
      grpmeta: k("grpmeta"),
      grpmembers: k("grpmembers"),
      grpdeltas: k("grpdeltas"),
      vpending: k("vpending"),
      readseq: k("readseq"),
      outbox: this.outbox(bucket),
    };
  }

  /** The bucket's outbox: commits RECORDED but not yet in the dispatch log. */
  outbox(bucket: number): string {
    return `${this.prefix}:${bucketTag(bucket)}:outbox`;
  }

  user(tenant: Uuid, user: Uuid): UserKeys {
    const bucket = commitBucket(tenant, user);
    const tag = userTag(bucket);
    const ref = `${uuidToHex(tenant)}:${uuidToHex(user)}`;
    return {
      bucket,
      tag,
      ref,
      convs: `${this.prefix}:${tag}:convs:${ref}`,
      ucsPending: this.ucsPending(bucket),
      epochMarks: this.epochMarks(bucket),
      ucsHash: `${this.prefix}:${tag}:ucs:${ref}`,
    };
  }

  /** A user bucket's queue of (tenant, user, conversation, kind, created_at) awaiting the authority. */
  ucsPending(bucket: number): string {
    return `${this.prefix}:${userTag(bucket)}:session_projection:ucs_pending`;
  }

  /**
   * A user bucket's dead letters: pending registrations that could not be decoded, moved here by
   * the registration task so they stop blocking the queue (capped; for an operator to inspect).
   */
  ucsDead(bucket: number): string {
    return `${this.prefix}:${userTag(bucket)}:session_projection:ucs_dead`;
  }

  /** A user bucket's hash: tenant:user → the projection epoch that user's list was last rebuilt at. */
  epochMarks(bucket: number): string {
    return `${this.prefix}:${userTag(bucket)}:epoch_marks`;
  }

  /** Pattern matching every user's projection zset (drills sample users with SCAN over it). */
  convsPattern(): string {
    return `${this.prefix}:{u*}:convs:*`;
  }

  /** session_projection:epoch (ADR-0021 §4). */
  projectionEpoch(): string {
    return `${this.prefix}:${GLOBAL_TAG}:session_projection:epoch`;
  }

  /** The newest bumps of the epoch, newest first (JSON entries: epoch, reason, by, at). */
  projectionEpochLog(): string {
    return `${this.prefix}:${GLOBAL_TAG}:session_projection:epoch_log`;
  }

  /** Held by the one rebuild drill running against this engine (token = drill id, expires). */
  drillLock(): string {
    return `${this.prefix}:${GLOBAL_TAG}:drill:lock`;
  }

  /** The projection consumer's checkpoint of one partition, bound to the log's identity. */
  dispatchCheckpoint(topic: string, partition: number): string {
    return `${this.prefix}:${partitionTag(partition)}:ckpt:${topic}:${partition}`;
  }

  dispatchPartition(topic: string, partition: number): string {
    return `${this.prefix}:${partitionTag(partition)}:dlog:${topic}:${partition}`;
  }

  dispatchIdentity(topic: string): string {
    return `${this.prefix}:${partitionTag(0)}:dlog:${topic}:identity`;
  }
}
