import { blake3 } from "@noble/hashes/blake3.js";
import { uuidToBytes, type Uuid } from "./ids.js";

/**
 * Number of commit buckets. Frozen once data exists: changing it (or the hash) re-homes every
 * conversation (DESIGN §2). The golden-vector test pins both.
 */
export const COMMIT_BUCKET_COUNT = 256;

/**
 * commit_bucket(tenant, conversation) (ADR-0021 §1): the first 4 bytes of
 * blake3(tenant ‖ conversation) (16 bytes each), big-endian, mod COMMIT_BUCKET_COUNT.
 * Pure and stable: every component that needs a conversation's keys calls this.
 */
export function commitBucket(tenant: Uuid, conversation: Uuid): number {
  const id = tenant + conversation;
  const known = bucketOf.get(id);
  if (known !== undefined) return known;
  if (bucketOf.size >= BUCKETS_REMEMBERED) bucketOf.clear();
  const bucket = hashBucket(tenant, conversation);
  bucketOf.set(id, bucket);
  return bucket;
}

/**
 * commitBucket's answers, remembered (it is pure): the relay and the dispatch log ask for the same
 * conversations' buckets on every commit, and a blake3 with @noble/hashes allocates a few KB.
 */
const bucketOf = new Map<string, number>();
const BUCKETS_REMEMBERED = 100_000;

function hashBucket(tenant: Uuid, conversation: Uuid): number {
  const input = new Uint8Array(32);
  input.set(uuidToBytes(tenant), 0);
  input.set(uuidToBytes(conversation), 16);
  const d = blake3(input);
  const head = ((d[0]! << 24) | (d[1]! << 16) | (d[2]! << 8) | d[3]!) >>> 0;
  return head % COMMIT_BUCKET_COUNT;
}

/** The `{bNNN}` hash tag of a bucket: every key of one conversation carries it. */
export function bucketTag(bucket: number): string {
  return `{b${String(bucket).padStart(3, "0")}}`;
}

/**
 * The `{uNNN}` hash tag of a user's session keys (projection, epoch mark, pending registrations,
 * the Redis-hash authority): commitBucket(tenant, user), so session keys spread over every
 * instance like conversations do instead of sitting on one "default" instance.
 */
export function userTag(bucket: number): string {
  return `{u${String(bucket).padStart(3, "0")}}`;
}

/** The `{rNNN}` hash tag of a room unit (core/rooms): its lease, and nothing else (a room's log is in memory). */
export function roomTag(unit: number): string {
  return `{r${String(unit).padStart(3, "0")}}`;
}

/** The `{g000}` hash tag of the few engine-wide keys (the projection epoch and its log). */
export const GLOBAL_TAG = "{g000}";

/** The `{dNNN}` hash tag of a dispatch-log partition. */
export function partitionTag(partition: number): string {
  return `{d${String(partition).padStart(3, "0")}}`;
}

/**
 * The shard number a hash tag routes by on standalone instances: the digits of `{xNNN}`.
 * Instance index = shard mod instance count, the same in every component.
 */
export function tagShard(tag: string): number {
  const m = /^\{[a-z](\d{3})\}$/.exec(tag);
  if (!m) throw new Error(`not a routing hash tag: ${tag}`);
  return Number(m[1]);
}
