import { bucketTag, commitBucket, uuidToHex, type KeySpace, type Uuid } from "../base/index.js";

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
  /**
   * The unread index: zset, score seq, member "seq|sender|mentions" of every record that counts
   * toward unread, written with its history entry (commitMessages-8.lua). The unread scripts read
   * it instead of the entries, whose payloads can be tens of KB (issue 22). grpmeta's
   * `unread_index_from` is the first seq it covers; older records are read from `hist`. It lives
   * and goes with `hist`: history is never trimmed today, and a trim must drop the same seqs here.
   */
  unreadidx: string;
  /**
   * Reaction summaries (spec 003 §4, issue 28, core/reactions): zset, score seq, member
   * "seq\tsummary_version\tdetailRows\tmarkerOnly{\tkey\tcount}" — one per message with reactions,
   * read for a history page in one range (the same read as the messages), trimmed with `hist`.
   */
  rxsum: string;
  outbox: string;
}

export function conversationKeys(space: KeySpace, tenant: Uuid, conversation: Uuid): ConversationKeys {
  const bucket = commitBucket(tenant, conversation);
  const tag = bucketTag(bucket);
  const id = `${uuidToHex(tenant)}:${uuidToHex(conversation)}`;
  const k = (name: string) => space.key(tag, name, id);
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
    unreadidx: k("unreadidx"),
    rxsum: k("rxsum"),
    outbox: outboxKey(space, bucket),
  };
}

/**
 * One message's reactions by user (spec 003 §4.1, core/reactions): hash, field "userHex\tkey" ->
 * reacted_at ms (a detail row) or "" (the idempotency mark alone, past reaction_detail_max_members
 * or reaction_detail_max_per_message). On the conversation's tag; gone with the message's recall
 * (applyAnchorEvent) or its trim (retention).
 */
export function reactionWhoKey(space: KeySpace, tenant: Uuid, conversation: Uuid, seq: number): string {
  const tag = bucketTag(commitBucket(tenant, conversation));
  return space.key(tag, "rxwho", `${uuidToHex(tenant)}:${uuidToHex(conversation)}:${seq}`);
}

/** The bucket's outbox: commits RECORDED but not yet in the dispatch log. */
export function outboxKey(space: KeySpace, bucket: number): string {
  return space.key(bucketTag(bucket), "outbox");
}
