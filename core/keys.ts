import { bucketTag, commitBucket, partitionTag } from "./bucket.js";
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

  dispatchPartition(topic: string, partition: number): string {
    return `${this.prefix}:${partitionTag(partition)}:dlog:${topic}:${partition}`;
  }

  dispatchIdentity(topic: string): string {
    return `${this.prefix}:${partitionTag(0)}:dlog:${topic}:identity`;
  }
}
