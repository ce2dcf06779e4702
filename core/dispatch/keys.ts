import { bucketTag, partitionTag, type KeySpace } from "../base/index.js";

/** One partition of the dispatch log (a Redis Stream on the partition's `{dNNN}` tag). */
export function dispatchPartitionKey(space: KeySpace, topic: string, partition: number): string {
  return space.key(partitionTag(partition), "dlog", `${topic}:${partition}`);
}

/** The log's identity (cluster, topic, partition count), beside partition 0. */
export function dispatchIdentityKey(space: KeySpace, topic: string): string {
  return space.key(partitionTag(0), "dlog", `${topic}:identity`);
}

/**
 * A commit bucket's fanout jobs (issue 22), on the bucket's `{bNNN}` tag beside its outbox, so that
 * markCommitted moves a seq from the outbox into a job in one atomic step: the queue of jobs
 * ("T|C|seq", in order), each job's state, and per conversation how many jobs are pending.
 */
export interface FanoutKeys {
  fanoutJobs: string;
  fanoutState: string;
  fanoutPending: string;
}

export function fanoutKeys(space: KeySpace, bucket: number): FanoutKeys {
  const tag = bucketTag(bucket);
  return {
    fanoutJobs: space.key(tag, "fanout", "jobs"),
    fanoutState: space.key(tag, "fanout", "state"),
    fanoutPending: space.key(tag, "fanout", "pending"),
  };
}

/**
 * The bucket's directory of conversations (issue 26): zset, score 0, member "tenantHex|conversationHex"
 * of every conversation the relay has drained a commit of, written before the commit is marked
 * (so a crash in between leaves the commit in the outbox, and the next drain writes it again).
 * Per-bucket tasks (retention) walk it in pages by lex order instead of a SCAN of the key space.
 */
export function bucketConversationsKey(space: KeySpace, bucket: number): string {
  return space.key(bucketTag(bucket), "conversations");
}
