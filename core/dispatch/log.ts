import { commitBucket } from "../base/index.js";
import { FailedPreconditionError } from "../base/index.js";
import { hexToUuid, splitHexIds, uuidToHex, type Uuid } from "../base/index.js";
import type { KeySpace } from "../base/index.js";
import { dispatchIdentityKey, dispatchPartitionKey } from "./keys.js";
import { AppendedRecords } from "./appended.js";
import { metrics } from "./metrics.js";
import { appendRecordsScript, readLogScript, type LogRead } from "./scripts.js";
import type { RedisStore } from "../store/index.js";

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
  /**
   * The recipients as the log stores them (concatenated 32-hex ids), when the record was made from
   * that form (the relay's load): the append writes it as it is instead of converting every id back.
   * Absent: made from `recipients`. Never set apart from `recipients` (they name the same users).
   */
  recipientsHex?: string;
  /**
   * Which part of the seq's audience this record carries (issue 22): 0 for a seq dispatched in one
   * record; a fanout job appends chunks 0, 1, 2 … of at most FANOUT_CHUNK_RECIPIENTS recipients
   * each, whose union is the audience. Stream field `k`, written only when not 0 (absent = 0, as
   * in records written before chunks existed).
   */
  chunk: number;
  /**
   * What the delivery consumer pushes to devices (issue 27). Absent: the record to its recipients.
   * "members": a large group's message announced once, before its fanout job (recipients empty,
   * chunk MEMBERS_RECORD_CHUNK): pushed to every member visible at the seq whose device is online,
   * wherever it is connected, so devices never wait for the job's chunks. "none": a chunk of such a
   * job, for the projections only. Stream field `p` ("m" / "n"), written only when set.
   */
  push?: "members" | "none";
}

/** The chunk number of a members record: apart from the fanout job's chunks 0, 1, 2 … of the same seq. */
export const MEMBERS_RECORD_CHUNK = -1;

/**
 * A record's identity among a partition's records: a fanout job's chunks share their seq and each
 * names other recipients, so the chunk is part of it. In-process consumers use it to know that the
 * relay's low-latency hand-off already brought them a record their log read reaches later.
 */
export function dispatchRecordKey(r: DispatchRecord): string {
  return `${r.tenant}|${r.conversation}|${r.conversationSeq}|${r.chunk}`;
}

export interface DispatchIdentity {
  clusterId: string;
  topicId: string;
  partitionCount: number;
}

export interface DispatchEntry {
  /** The record's ordinal offset within its partition (0 for the first record ever appended). */
  offset: number;
  /** The record's native id (a Redis stream id on the embedded default). */
  id: string;
  record: DispatchRecord;
}

/**
 * A partition's watermarks, Kafka-style ordinal offsets: `low` = the offset of the oldest record
 * still retained (= records trimmed so far), `high` = the offset the next record will get
 * (= records ever appended). Records [low, high) are readable; low > 0 means retention dropped some.
 */
export interface Watermarks {
  low: number;
  high: number;
  /** Native id of the newest record ever appended ("0-0" when none). */
  lastId: string;
  /** The position just before the oldest retained record: where a consumer continues when the records before it were dropped. */
  lowPosition: LogPosition;
  /** Append time (ms) of the newest record; null when none. */
  newestMs: number | null;
}

/**
 * Where a consumer stands in a partition: `offset` = the next record to read; `id` = the native id
 * of the record before it ("0-0" at the start), which is how the log seeks.
 */
export interface LogPosition {
  offset: number;
  id: string;
}

export const LOG_START: LogPosition = { offset: 0, id: "0-0" };

/** Records after a position and the watermarks, read in one atomic step. */
export interface ReadResult {
  watermarks: Watermarks;
  entries: DispatchEntry[];
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
  /** The identity recorded in the store, or null before the first ensureIdentity(). */
  storedIdentity(): Promise<DispatchIdentity | null>;
  append(records: DispatchRecord[]): Promise<void>;
  watermarks(partition: number): Promise<Watermarks>;
  /**
   * Up to `count` records from `from` on, with the watermarks of the same instant. When
   * from.offset < low the records in between are gone: the caller must not treat what it gets as
   * contiguous (the projection consumer checks this before using the entries).
   */
  readFrom(partition: number, from: LogPosition, count: number): Promise<ReadResult>;
  /** Drops records appended before `olderThanMs` (time-based retention); returns how many per partition. */
  trim(olderThanMs: number): Promise<number[]>;
}

/** Total order of Redis stream ids ("ms-seq"). */
export function compareStreamIds(a: string, b: string): number {
  const [am, as] = a.split("-").map(BigInt) as [bigint, bigint];
  const [bm, bs] = b.split("-").map(BigInt) as [bigint, bigint];
  return am === bm ? (as === bs ? 0 : as < bs ? -1 : 1) : am < bm ? -1 : 1;
}

/** The greatest stream id below `id` (so that an exclusive range from it starts at `id`). */
function previousStreamId(id: string): string {
  const [ms, seq] = id.split("-").map(BigInt) as [bigint, bigint];
  if (seq > 0n) return `${ms}-${seq - 1n}`;
  if (ms === 0n) return "0-0";
  return `${ms - 1n}-18446744073709551615`;
}

function streamIdMs(id: string): number {
  return Number(id.slice(0, id.indexOf("-")));
}

export class RedisStreamsDispatchLog implements DispatchLog {
  /** What this process appended, read back by id instead of whole (appended.ts). */
  private readonly appended: AppendedRecords;

  constructor(
    private readonly store: RedisStore,
    private readonly keys: KeySpace,
    readonly identity: DispatchIdentity,
  ) {
    if (!Number.isInteger(identity.partitionCount) || identity.partitionCount < 1 || identity.partitionCount > 999) {
      throw new Error("partitionCount must be an integer from 1 to 999");
    }
    this.appended = new AppendedRecords(identity.partitionCount);
  }

  partitionOf(tenant: Uuid, conversation: Uuid): number {
    return commitBucket(tenant, conversation) % this.identity.partitionCount;
  }

  private key(partition: number): string {
    return dispatchPartitionKey(this.keys, this.identity.topicId, partition);
  }

  async ensureIdentity(): Promise<void> {
    const key = dispatchIdentityKey(this.keys, this.identity.topicId);
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
    // one call per partition: a partition's stream is one key (one slot on a cluster), and
    // records of a conversation keep their order inside it
    const byKey = new Map<string, { partition: number; list: DispatchRecord[] }>();
    for (const r of records) {
      const partition = this.partitionOf(r.tenant, r.conversation);
      const key = this.key(partition);
      const group = byKey.get(key);
      if (group) group.list.push(r); else byKey.set(key, { partition, list: [r] });
    }
    const fields = (r: DispatchRecord) => {
      const f = ["t", uuidToHex(r.tenant), "c", uuidToHex(r.conversation), "s", String(r.conversationSeq),
        "v", String(r.version), "e", r.entry, "r", r.recipientsHex ?? r.recipients.map(uuidToHex).join("")];
      if (r.chunk !== 0) f.push("k", String(r.chunk));
      if (r.push) f.push("p", r.push === "members" ? "m" : "n");
      return f;
    };
    await Promise.all([...byKey].map(async ([key, { partition, list }]) => {
      const client = this.store.clientForKey(key);
      // one script call per partition appends the batch in order (appendRecords-1.lua): it was one
      // XADD command per record, 8,500 commands for 8,500 messages of a busy group. With
      // redis.ack_replicas (issue 26) store.commit puts WAIT behind it on the same connection,
      // before the relay marks their commits dispatched
      const { previous, ids } = await this.store.commit(appendRecordsScript, client, { stream: key }, { records: list.map(fields) });
      // kept once all are in and acknowledged: a failure leaves the batch to the relay's retry
      ids.forEach((id, i) => this.appended.add(partition, id, list[i]!, i === 0 ? previous : ids[i - 1]!));
    }));
  }

  async storedIdentity(): Promise<DispatchIdentity | null> {
    const key = dispatchIdentityKey(this.keys, this.identity.topicId);
    const have = await this.store.clientForKey(key).hgetall(key);
    if (!have.cluster_id) return null;
    return { clusterId: have.cluster_id, topicId: have.topic_id ?? "", partitionCount: Number(have.partition_count) };
  }

  async watermarks(partition: number): Promise<Watermarks> {
    return (await this.readFrom(partition, LOG_START, 0)).watermarks;
  }

  /**
   * A run of records this process appended right after `from` comes from memory (AppendedRecords.run):
   * under load that is nearly every read of the node's own consumers. Whatever may follow the run
   * (another process's records, or the watermarks) is read from the stream, unless the run
   * already fills `count`: then the watermarks are the run's own (low = from, high = past the
   * run), the caller reads on from the run's end.
   */
  async readFrom(partition: number, from: LogPosition, count: number): Promise<ReadResult> {
    const run = this.appended.run(partition, from.id, count);
    if (run.length === 0) return this.readStream(partition, from, count);
    metrics.logRecordsRead.inc({ body: "memory" }, run.length);
    const entries: DispatchEntry[] = run.map((k, i) => ({ offset: from.offset + i, id: k.id, record: k.record }));
    const last = run[run.length - 1]!;
    const end = { offset: from.offset + run.length, id: last.id };
    if (run.length === count) {
      return { watermarks: { low: from.offset, high: end.offset, lastId: last.id, lowPosition: from, newestMs: last.ms }, entries };
    }
    const rest = await this.readStream(partition, end, count - run.length);
    return { watermarks: rest.watermarks, entries: entries.concat(rest.entries) };
  }

  /**
   * The watermarks and the records in one script call (readLog-1.lua): it was a MULTI of XINFO
   * STREAM and XRANGE, and XINFO STREAM answers the partition's first and last records whole —
   * decoded at every read of every consumer, mostly reads that find nothing new.
   */
  private async readStream(partition: number, from: LogPosition, count: number): Promise<ReadResult> {
    const key = this.key(partition);
    const start = from.id === "0-0" ? "-" : `(${from.id}`;
    // the records this process appended come back as their ids: their bodies are here
    const known = this.appended.after(partition, from.id, count);
    const read = await readLogScript.run(this.store.clientForKey(key), { stream: key }, { start, count, known: [...known].flatMap(([id, r]) => [id, String(r.conversationSeq)]) });
    const watermarks = watermarksOf(read);
    let kept = 0;
    const entries = read.records.map((r, i) => {
      if (typeof r === "string") {
        kept++;
        return { offset: from.offset + i, id: r, record: known.get(r)! };
      }
      return { offset: from.offset + i, id: r[0], record: parseRecord(r[1]) };
    });
    if (entries.length > 0) {
      metrics.logRecordsRead.inc({ body: "kept" }, kept);
      metrics.logRecordsRead.inc({ body: "read" }, entries.length - kept);
    }
    return { watermarks, entries };
  }

  async trim(olderThanMs: number): Promise<number[]> {
    const minId = `${Math.max(0, Math.floor(olderThanMs))}-0`;
    return Promise.all(Array.from({ length: this.identity.partitionCount }, (_, p) => {
      const key = this.key(p);
      return this.store.clientForKey(key).xtrim(key, "MINID", minId);
    }));
  }
}

function watermarksOf(read: LogRead): Watermarks {
  if (!read.exists) return { low: 0, high: 0, lastId: "0-0", lowPosition: LOG_START, newestMs: null };
  const high = read.entriesAdded;
  const lastId = read.lastId;
  return {
    low: high - read.length,
    high,
    lastId,
    // the first record's id comes with the same read: no second read for it
    lowPosition: { offset: high - read.length, id: read.firstId !== "" ? previousStreamId(read.firstId) : lastId },
    newestMs: lastId === "0-0" ? null : streamIdMs(lastId),
  };
}

function parseRecord(fields: string[]): DispatchRecord {
  const f: Record<string, string> = {};
  for (let i = 0; i < fields.length; i += 2) f[fields[i]!] = fields[i + 1]!;
  const raw = f.r ?? "";
  let recipients: Uuid[] | undefined;
  const record: DispatchRecord = {
    tenant: hexToUuid(f.t!),
    conversation: hexToUuid(f.c!),
    conversationSeq: Number(f.s),
    version: Number(f.v),
    entry: f.e!,
    // made on first use: a consumer that passes a record by (delivery skips a job's chunks, 1,000
    // recipients each) does not turn its ids into strings for nothing
    get recipients(): Uuid[] {
      return (recipients ??= splitHexIds(raw));
    },
    set recipients(v: Uuid[]) {
      recipients = v;
    },
    chunk: f.k === undefined ? 0 : Number(f.k),
  };
  if (f.p === "m") record.push = "members";
  else if (f.p === "n") record.push = "none";
  return record;
}
