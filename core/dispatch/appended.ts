import type { DispatchRecord } from "./log.js";

/**
 * Recipients (summed over records) the dispatch log keeps of the records this process appended,
 * over all partitions, so that its own consumers' reads need not carry them back.
 */
export const DISPATCH_APPENDED_KEEP_RECIPIENTS = 262_144;

export interface Kept {
  ms: number;
  seq: number;
  id: string;
  /** The id of the partition's record right before this one when it was appended ("" none). */
  previous: string;
  record: DispatchRecord;
  weight: number;
}

interface Partition {
  list: Kept[];
  /** The oldest kept entry's index in `list` (the ones before it are dropped). */
  head: number;
}

function parseId(id: string): [number, number] {
  const dash = id.indexOf("-");
  return [Number(id.slice(0, dash)), Number(id.slice(dash + 1))];
}

/**
 * The records this process appended to the dispatch log, by partition and stream id, newest kept.
 *
 * Every record a node's relay appends is read back by three consumers of the same process (the
 * session projection, the conversation list and delivery), each behind its own checkpoint, right
 * after the relay handed the same record objects to their low-latency paths. Reading them whole
 * three times was a fifth of the node's CPU in bench/engine-cost: about 2.7 KB of Redis reply a
 * message, decoded into nested arrays and parsed again. A run of kept records that follows the
 * reader's position with nothing between (each append answers the record it came right after) is
 * served from here without reading the stream; past such a run the log passes the ids it keeps
 * with its read (lua/dispatch/readLog-1.lua) and gets those back bare; a record another process
 * appended, or one dropped from here, still comes whole. Bounded by recipients
 * (DISPATCH_APPENDED_KEEP_RECIPIENTS over all partitions; about 2 s of one busy 20-member group at
 * 6,000 messages a second, longer than the durable consumers' 250 ms polls), oldest dropped first.
 */
export class AppendedRecords {
  private readonly parts: Partition[];
  /** The partition of every kept record, oldest first (each partition's own list is in the same order). */
  private order: number[] = [];
  private orderHead = 0;
  private weight = 0;

  constructor(partitions: number, private readonly keepRecipients: number = DISPATCH_APPENDED_KEEP_RECIPIENTS) {
    this.parts = Array.from({ length: partitions }, () => ({ list: [], head: 0 }));
  }

  /**
   * Keeps `record`, appended to `partition` as `id` right after the record `previous` (as the
   * append's own atomic step saw it). An id not above the newest kept one is not kept (ids are
   * only searched in order).
   */
  add(partition: number, id: string, record: DispatchRecord, previous: string): void {
    const p = this.parts[partition];
    if (!p) return;
    const [ms, seq] = parseId(id);
    const last = p.list.length > p.head ? p.list[p.list.length - 1]! : null;
    if (last && (ms < last.ms || (ms === last.ms && seq <= last.seq))) return;
    const weight = 1 + (record.recipientsHex !== undefined ? record.recipientsHex.length / 32 : record.recipients.length);
    p.list.push({ ms, seq, id, previous, record, weight });
    this.order.push(partition);
    this.weight += weight;
    // the oldest go first, whichever partition they are in (one busy conversation keeps one partition busy)
    while (this.weight > this.keepRecipients && this.orderHead < this.order.length - 1) {
      const q = this.parts[this.order[this.orderHead++]!]!;
      this.weight -= q.list[q.head]!.weight;
      q.list[q.head] = undefined as unknown as Kept;
      q.head++;
      if (q.head > 1024 && q.head * 2 > q.list.length) {
        q.list = q.list.slice(q.head);
        q.head = 0;
      }
    }
    if (this.orderHead > 4096 && this.orderHead * 2 > this.order.length) {
      this.order = this.order.slice(this.orderHead);
      this.orderHead = 0;
    }
  }

  /** Up to `count` kept records of `partition` with ids after `fromId` ("0-0": from the start), by id. */
  after(partition: number, fromId: string, count: number): Map<string, DispatchRecord> {
    const out = new Map<string, DispatchRecord>();
    const p = this.parts[partition];
    if (!p || count <= 0) return out;
    for (let i = this.firstAbove(p, fromId); i < p.list.length && out.size < count; i++) out.set(p.list[i]!.id, p.list[i]!.record);
    return out;
  }

  /**
   * Up to `count` kept records that are exactly what the partition holds right after `fromId`:
   * the first was appended right after `fromId`, each next one right after the one before (no
   * other process's record between them). Empty when the record after `fromId` is not known here.
   */
  run(partition: number, fromId: string, count: number): Kept[] {
    const out: Kept[] = [];
    const p = this.parts[partition];
    if (!p || count <= 0) return out;
    let before = fromId;
    for (let i = this.firstAbove(p, fromId); i < p.list.length && out.length < count; i++) {
      const k = p.list[i]!;
      if (k.previous !== before) break;
      out.push(k);
      before = k.id;
    }
    return out;
  }

  /** The index of the first kept entry of `p` above `fromId` (p.list.length when none). */
  private firstAbove(p: Partition, fromId: string): number {
    const [fms, fseq] = parseId(fromId);
    let lo = p.head;
    let hi = p.list.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const k = p.list[mid]!;
      if (k.ms < fms || (k.ms === fms && k.seq <= fseq)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** Records kept now, and their weight (recipients + 1 each). */
  size(): { records: number; weight: number } {
    return { records: this.order.length - this.orderHead, weight: this.weight };
  }
}
