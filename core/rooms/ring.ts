import { ROOM_COUNTER_BITS, type Uuid } from "../base/index.js";

/** The largest epoch a room_seq carries (16 bits): a lease token past it wraps to 1 (docs/rooms.md "Epochs"). */
export const ROOM_EPOCH_MAX = 0xffff;
const COUNTER_MASK = (1n << BigInt(ROOM_COUNTER_BITS)) - 1n;

/** room_seq = (room_epoch << 48) | counter (spec 003 §1.2). */
export function roomSeq(epoch: number, counter: number): bigint {
  return (BigInt(epoch) << BigInt(ROOM_COUNTER_BITS)) | BigInt(counter);
}

/** A room_seq's epoch and counter. */
export function splitRoomSeq(seq: bigint): { epoch: number; counter: number } {
  return { epoch: Number(seq >> BigInt(ROOM_COUNTER_BITS)), counter: Number(seq & COUNTER_MASK) };
}

/** A writer's epoch from its room unit's fencing token: 1 … ROOM_EPOCH_MAX, growing with the token (wrapping after 65,535 takeovers of one unit). */
export function epochOfToken(token: number): number {
  return ((Math.max(1, token) - 1) % ROOM_EPOCH_MAX) + 1;
}

/** One room message as the writer's ring keeps it and every ROOM_BATCH carries it. */
export interface RoomRecord {
  roomSeq: bigint;
  /** For the clients' dedupe and for reports (spec 003 §1.1): named by the sender's client_msg_no. */
  messageId: string;
  sender: Uuid;
  senderDevice: string;
  /** The writer's clock (ms). */
  createdAt: number;
  contentType: string;
  payload: Uint8Array;
}

/** What a replay from a cursor finds in the ring. */
export interface ReplayPage {
  /** The events after the cursor, oldest first, at most the limit. */
  events: RoomRecord[];
  /** The cursor cannot be continued: it is outside the window, of another epoch, or ahead of the writer. Jump to `latest`. */
  truncated: boolean;
  /** More events follow the page (replay again after its last). */
  more: boolean;
}

/**
 * A room's ring buffer (spec 003 §1.3, ADR-0007): the writer's messages of its current epoch, in
 * room_seq order, evicted by whichever comes first of a count cap and an age; in memory only —
 * never on disk, never replicated. Counters are contiguous (every message the writer took is in the
 * ring until evicted), so a cursor finds its place by arithmetic, not by a search.
 */
export class RoomRing {
  private items: RoomRecord[] = [];
  /** The kept records by message id: a retried message (the same client_msg_no) is found, not taken twice. */
  private readonly byMessage = new Map<string, RoomRecord>();
  /** Index of the oldest kept item in `items` (the array is compacted when half of it is dead). */
  private head = 0;
  private counter = 0;

  constructor(
    readonly epoch: number,
    private readonly maxItems: number,
    private readonly retentionMs: number,
    /** The counter a ring of this epoch reached before it was forgotten: the next message takes the one after it. */
    startCounter = 0,
  ) {
    this.counter = startCounter;
    if (!(epoch >= 1 && epoch <= ROOM_EPOCH_MAX)) throw new RangeError(`room epoch ${epoch}: 1 to ${ROOM_EPOCH_MAX}`);
    if (!(maxItems >= 1)) throw new RangeError("a ring keeps at least one item");
  }

  get size(): number {
    return this.items.length - this.head;
  }

  /** The newest room_seq taken; (epoch << 48) | 0 before the first. */
  get latest(): bigint {
    return roomSeq(this.epoch, this.counter);
  }

  /** The oldest room_seq a replay can return (latest + 1 when the ring is empty): a cursor ≥ earliest − 1 is continued without a gap. */
  get earliest(): bigint {
    return roomSeq(this.epoch, this.counter - this.size + 1);
  }

  /** Takes the next room_seq for a message and keeps it; returns the record kept. */
  append(r: Omit<RoomRecord, "roomSeq">): RoomRecord {
    const rec: RoomRecord = { ...r, roomSeq: roomSeq(this.epoch, ++this.counter) };
    this.items.push(rec);
    this.byMessage.set(rec.messageId, rec);
    this.evict(r.createdAt);
    return rec;
  }

  /** Drops what is past the count cap or older than the retention, as of `now`. */
  evict(now: number): void {
    const oldest = now - this.retentionMs;
    while (this.size > this.maxItems || (this.size > 0 && this.items[this.head]!.createdAt < oldest)) {
      const gone = this.items[this.head]!;
      if (this.byMessage.get(gone.messageId) === gone) this.byMessage.delete(gone.messageId);
      this.items[this.head++] = undefined as never;
    }
    if (this.head > 64 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }

  /** The kept record of a message id (a retry of a message still in the window), if any. */
  find(messageId: string): RoomRecord | undefined {
    return this.byMessage.get(messageId);
  }

  /**
   * The events after `after` (a room_seq the client holds everything up to), at most `limit`.
   * Truncated — no events — when the cursor is of another epoch, older than the window, or ahead of
   * the writer: the client jumps to `latest` (spec 003 §1.4: not an error, the room's steady state).
   */
  replay(after: bigint, limit: number, now: number): ReplayPage {
    this.evict(now);
    const { epoch, counter } = splitRoomSeq(after);
    const first = this.counter - this.size + 1;
    if (epoch !== this.epoch || counter > this.counter || counter < first - 1) return { events: [], truncated: true, more: false };
    const from = this.head + (counter - first + 1);
    const to = Math.min(this.items.length, from + limit);
    return { events: this.items.slice(from, to), truncated: false, more: to < this.items.length };
  }
}
