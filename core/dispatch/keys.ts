import { partitionTag, type KeySpace } from "../base/index.js";

/** One partition of the dispatch log (a Redis Stream on the partition's `{dNNN}` tag). */
export function dispatchPartitionKey(space: KeySpace, topic: string, partition: number): string {
  return space.key(partitionTag(partition), "dlog", `${topic}:${partition}`);
}

/** The log's identity (cluster, topic, partition count), beside partition 0. */
export function dispatchIdentityKey(space: KeySpace, topic: string): string {
  return space.key(partitionTag(0), "dlog", `${topic}:identity`);
}
