import { commitBucket } from "./bucket.js";
import { FailedPreconditionError } from "./errors.js";
import { hexToUuid, splitHexIds, uuidToHex, type Uuid } from "./ids.js";
import type { KeySpace } from "./keys.js";
import type { RedisStore } from "./store.js";

/** One committed message handed to dispatch: what it is and exactly whom it goes to. */
export interface DispatchRecord {
  tenant: Uuid;
  conversation: Uuid;
  conversationSeq: number;
  /** The member version the audience was frozen at (the event's new version for a control message). */
  version: number;
  /** The raw history entry (see history.ts). */
  entry: string;
  recipients: Uuid[];
}

export interface DispatchIdentity {
  clusterId: string;
  topicId: string;
  partitionCount: number;
}

export interface DispatchEntry {
  /** Offset within the partition (a Redis stream id on the embedded default). */
  offset: string;
  record: DispatchRecord;
}

/**
 * The partitioned dispatch log. Redis Streams back it on the embedded default; a broker (Kafka,
 * NATS JetStream) can implement the same interface at scale. Records of one conversation always
 * land in one partition, in the order appended.
 */
export interface DispatchLog {
  readonly identity: DispatchIdentity;
  partitionOf(tenant: Uuid, conversation: Uuid): number;
  /** Records the identity on first use; refuses a log whose stored identity differs. */
  ensureIdentity(): Promise<void>;
  append(records: DispatchRecord[]): Promise<void>;
  read(partition: number, afterOffset: string, count: number): Promise<DispatchEntry[]>;
}

export class RedisStreamsDispatchLog implements DispatchLog {
  constructor(
    private readonly store: RedisStore,
    private readonly keys: KeySpace,
    readonly identity: DispatchIdentity,
  ) {
    if (!Number.isInteger(identity.partitionCount) || identity.partitionCount < 1 || identity.partitionCount > 999) {
      throw new Error("partitionCount must be an integer from 1 to 999");
    }
  }

  partitionOf(tenant: Uuid, conversation: Uuid): number {
    return commitBucket(tenant, conversation) % this.identity.partitionCount;
  }

  private key(partition: number): string {
    return this.keys.dispatchPartition(this.identity.topicId, partition);
  }

  async ensureIdentity(): Promise<void> {
    const key = this.keys.dispatchIdentity(this.identity.topicId);
    const client = this.store.clientForKey(key);
    const want = { cluster_id: this.identity.clusterId, topic_id: this.identity.topicId, partition_count: String(this.identity.partitionCount) };
    // one atomic step: the first process records the identity, every later one reads it back
    const res = await client.multi()
      .hsetnx(key, "cluster_id", want.cluster_id)
      .hsetnx(key, "topic_id", want.topic_id)
      .hsetnx(key, "partition_count", want.partition_count)
      .hgetall(key)
      .exec();
    const have = res![3]![1] as Record<string, string>;
    for (const [k, v] of Object.entries(want)) {
      if (have[k] !== v) {
        throw new FailedPreconditionError(`dispatch log identity mismatch: ${k} is ${have[k]}, this process expects ${v}`, { field: k, stored: have[k], expected: v });
      }
    }
  }

  async append(records: DispatchRecord[]): Promise<void> {
    // one pipeline per partition: a partition's stream is one key (one slot on a cluster), and
    // records of a conversation keep their order inside it
    const byKey = new Map<string, DispatchRecord[]>();
    for (const r of records) {
      const key = this.key(this.partitionOf(r.tenant, r.conversation));
      const list = byKey.get(key);
      if (list) list.push(r); else byKey.set(key, [r]);
    }
    await Promise.all([...byKey].map(async ([key, list]) => {
      const p = this.store.clientForKey(key).pipeline();
      for (const r of list) {
        p.xadd(key, "*", "t", uuidToHex(r.tenant), "c", uuidToHex(r.conversation), "s", String(r.conversationSeq),
          "v", String(r.version), "e", r.entry, "r", r.recipients.map(uuidToHex).join(""));
      }
      const res = await p.exec();
      for (const [err] of res ?? []) if (err) throw err;
    }));
  }

  async read(partition: number, afterOffset: string, count: number): Promise<DispatchEntry[]> {
    const key = this.key(partition);
    const client = this.store.clientForKey(key);
    const start = afterOffset === "0" || afterOffset === "" ? "-" : `(${afterOffset}`;
    const rows = await client.xrange(key, start, "+", "COUNT", count);
    return rows.map(([offset, fields]) => {
      const f: Record<string, string> = {};
      for (let i = 0; i < fields.length; i += 2) f[fields[i]!] = fields[i + 1]!;
      return {
        offset,
        record: {
          tenant: hexToUuid(f.t!),
          conversation: hexToUuid(f.c!),
          conversationSeq: Number(f.s),
          version: Number(f.v),
          entry: f.e!,
          recipients: splitHexIds(f.r ?? ""),
        },
      };
    });
  }
}
