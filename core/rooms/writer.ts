import {
  IdempotencyConflictError, InvalidArgumentError, NotFoundError, QimError, ROOM_INTEREST_TTL_MS, ROOM_MSG_BURST, ROOM_MSG_RATE, ROOM_REPLAY_PAGE_LIMIT, ROOM_RING_MAX_ITEMS, ROOM_LOG_RETENTION_MINUTES, type Uuid,
} from "../base/index.js";
import { StaleOwnerError } from "../cluster/index.js";
import { TokenBucket } from "../support/index.js";
import { roomMetrics } from "./metrics.js";
import { RoomRing, splitRoomSeq, type RoomRecord } from "./ring.js";

/**
 * What a node's connections in a room get (one per room per frame interval), and what ROOM_JOIN and
 * ROOM_REPLAY are answered with: the writer's window and the events. `truncated`: the events do not
 * continue what the connection had (another epoch, or outside the window) — jump to `latest`.
 */
export interface RoomWindow {
  tenant: Uuid;
  room: Uuid;
  epoch: number;
  /** The oldest room_seq a replay can still return (latest + 1 when none). */
  earliest: bigint;
  latest: bigint;
  truncated: boolean;
  /** A replay's page stopped at its limit: replay again after its last event. */
  more: boolean;
  events: RoomRecord[];
  /** Connections in the room across the cluster, as the writer counts them (spec 003 §7's open item). */
  online: number;
  /** The group the room became (spec 003 §1.6), "" while it is a room: send to it as a group from now on. */
  promotedTo: string;
}

/** A room as an operator sees it (qimctl room list|show). */
export interface RoomInfo {
  tenant: Uuid;
  room: Uuid;
  /** The node writing it (this one, when it answers). */
  writer: string;
  epoch: number;
  earliest: bigint;
  latest: bigint;
  /** Messages in the ring now. */
  kept: number;
  online: number;
  /** Nodes with connections in the room, with how many each. */
  nodes: { nodeId: string; connections: number }[];
  promotedTo: string;
  /** When the writer started this epoch of the room (ms). */
  since: number;
}

export interface PublishRequest {
  tenant: Uuid;
  room: Uuid;
  sender: Uuid;
  senderDevice: string;
  messageId: string;
  contentType: string;
  payload: Uint8Array;
}

/** room_msg_rate (spec 003 §1.5) refused a message: nothing was kept; retry after `retryAfterMs`. */
export class RoomRateLimitedError extends QimError {
  constructor(readonly retryAfterMs: number) {
    super("RATE_LIMITED", `the room takes at most ${ROOM_MSG_RATE} messages per second (room_msg_rate): nothing was sent; retry after ${retryAfterMs} ms`, { retryAfterMs });
    this.name = "RoomRateLimitedError";
  }
}

/** The room was promoted to a group (spec 003 §1.6): it takes no more room messages. */
export class RoomPromotedError extends QimError {
  constructor(readonly group: Uuid) {
    super("FAILED_PRECONDITION", `the room was promoted to group ${group}: send to the group`, { group });
    this.name = "RoomPromotedError";
  }
}

export interface RoomWritersOptions {
  /** This node's id ("" without a cluster). */
  nodeId: string;
  now?: () => number;
  /** The epoch this node writes a room unit's rooms with now, or null when it is not the unit's writer. */
  epochOf(unit: number): Promise<number | null>;
  /** Sends windows to a node's connections (grouped: one call per node per turn of the event loop). */
  broadcast(nodeId: string, windows: RoomWindow[]): void;
  /** The group a room was promoted to (read once when a writer takes the room up), or null. */
  promotedGroup(tenant: Uuid, room: Uuid, unit: number): Promise<Uuid | null>;
  ringMaxItems?: number;
  retentionMs?: number;
  /** room_msg_rate and its burst. */
  rate?: number;
  burst?: number;
}

/**
 * Rooms a writer forgot (nobody in them, their ring aged out) whose counter it still remembers, at
 * most: one opened again in the same epoch goes on from its counter, so a device never sees a
 * room_seq again (the oldest are forgotten first; past this a room opened again starts at 1).
 */
export const ROOM_FORGOTTEN_COUNTERS_MAX = 100_000;

class RoomState {
  readonly interest = new Map<string, { count: number; at: number }>();
  readonly bucket: TokenBucket;
  readonly since: number;
  /** Events waiting for this turn's broadcast. */
  outbound: RoomRecord[] = [];

  constructor(readonly tenant: Uuid, readonly room: Uuid, readonly unit: number, readonly ring: RoomRing, public promotedTo: string, opts: { rate: number; burst: number; now: () => number }) {
    this.bucket = new TokenBucket({ rate: opts.rate, burst: opts.burst }, opts.now);
    this.since = opts.now();
  }

  online(now: number): number {
    let n = 0;
    for (const [node, i] of this.interest) {
      if (now - i.at > ROOM_INTEREST_TTL_MS) this.interest.delete(node);
      else n += i.count;
    }
    return n;
  }
}

const keyOf = (tenant: Uuid, room: Uuid) => `${tenant}/${room}`;

/**
 * The writers of the rooms whose units this node owns (spec 003 §1.2): one writer per room at a
 * time, the owner of the room's unit, with the unit's fencing token as the room's epoch. Each room:
 * its ring, its room_msg_rate bucket, and the nodes that hold its connections (refreshed by them
 * every ROOM_INTEREST_REFRESH_MS, lapsing after ROOM_INTEREST_TTL_MS) — the broadcast goes to those
 * with any, one merged batch per node per turn, none to a node with zero.
 */
export class RoomWriters {
  private readonly rooms = new Map<string, RoomState>();
  /** Rooms being taken up (their epoch and promotion read), so that concurrent calls share one state. */
  private readonly opening = new Map<string, Promise<RoomState>>();
  private readonly now: () => number;
  private readonly dirty = new Set<RoomState>();
  private flushScheduled = false;

  constructor(private readonly opts: RoomWritersOptions) {
    this.now = opts.now ?? Date.now;
  }

  get size(): number {
    return this.rooms.size;
  }

  /** The room's writer state here: taken up on first use; StaleOwnerError when this node does not write the room's unit. */
  private async state(tenant: Uuid, room: Uuid, unit: number): Promise<RoomState> {
    const key = keyOf(tenant, room);
    const epoch = await this.opts.epochOf(unit);
    if (epoch === null) throw new StaleOwnerError(`room unit ${unit} is written by another node`, { kind: "room", unit });
    const s = this.rooms.get(key);
    if (s && s.ring.epoch === epoch) return s;
    if (s) this.drop(key, s); // the unit moved away and back: a new epoch, a new ring (spec 003 §1.3)
    let p = this.opening.get(key);
    if (!p) {
      p = (async () => {
        const promoted = await this.opts.promotedGroup(tenant, room, unit);
        const ring = new RoomRing(epoch, this.opts.ringMaxItems ?? ROOM_RING_MAX_ITEMS, this.opts.retentionMs ?? ROOM_LOG_RETENTION_MINUTES * 60_000, this.counterOf(key, epoch));
        this.forgotten.delete(key);
        const st = new RoomState(tenant, room, unit, ring, promoted ?? "", { rate: this.opts.rate ?? ROOM_MSG_RATE, burst: this.opts.burst ?? ROOM_MSG_BURST, now: this.now });
        this.rooms.set(key, st);
        roomMetrics.writerRooms.set(this.rooms.size);
        return st;
      })().finally(() => this.opening.delete(key));
      this.opening.set(key, p);
    }
    return p;
  }

  /** Forgotten rooms' counters by room (oldest first), for ROOM_FORGOTTEN_COUNTERS_MAX. */
  private readonly forgotten = new Map<string, { epoch: number; counter: number }>();

  /** Where a room's counter starts when it opens in `epoch`: where a forgotten ring of the same epoch stopped, or 0. */
  private counterOf(key: string, epoch: number): number {
    const f = this.forgotten.get(key);
    return f && f.epoch === epoch ? f.counter : 0;
  }

  private drop(key: string, s: RoomState): void {
    if (this.rooms.get(key) !== s) return;
    const counter = splitRoomSeq(s.ring.latest).counter;
    if (counter > 0) {
      this.forgotten.delete(key);
      while (this.forgotten.size >= ROOM_FORGOTTEN_COUNTERS_MAX) this.forgotten.delete(this.forgotten.keys().next().value!);
      this.forgotten.set(key, { epoch: s.ring.epoch, counter });
    }
    this.rooms.delete(key);
    this.dirty.delete(s);
    roomMetrics.writerRooms.set(this.rooms.size);
  }

  /** Takes a message (room_msg_rate), gives it the next room_seq, keeps it in the ring and broadcasts it. */
  async publish(req: PublishRequest, unit: number, fromNode: string, count: number): Promise<RoomRecord> {
    const s = await this.state(req.tenant, req.room, unit);
    // the sender's node is in the room: a writer that just took the room over sends there at once
    if (count > 0) s.interest.set(fromNode, { count, at: this.now() });
    if (s.promotedTo !== "") throw new RoomPromotedError(s.promotedTo as Uuid);
    // a retry (the same client_msg_no names the same message id) of a message still in the window: its first answer, nothing sent again
    const first = s.ring.find(req.messageId);
    if (first) {
      if (first.sender !== req.sender || first.contentType !== req.contentType || Buffer.compare(first.payload, req.payload) !== 0) {
        throw new IdempotencyConflictError(req.messageId, 0);
      }
      roomMetrics.writes.inc({ result: "duplicate" });
      return first;
    }
    const wait = s.bucket.take();
    if (wait > 0) {
      roomMetrics.writes.inc({ result: "rate_limited" });
      throw new RoomRateLimitedError(wait);
    }
    const rec = s.ring.append({ messageId: req.messageId, sender: req.sender, senderDevice: req.senderDevice, createdAt: this.now(), contentType: req.contentType, payload: req.payload });
    roomMetrics.writes.inc({ result: "ok" });
    s.outbound.push(rec);
    this.schedule(s);
    return rec;
  }

  private schedule(s: RoomState): void {
    this.dirty.add(s);
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => this.flush());
  }

  /** This turn's messages: per node with connections in their rooms, one call with a window per room. */
  private flush(): void {
    this.flushScheduled = false;
    const now = this.now();
    const byNode = new Map<string, RoomWindow[]>();
    for (const s of this.dirty) {
      const events = s.outbound;
      s.outbound = [];
      if (events.length === 0) continue;
      const online = s.online(now);
      const w: RoomWindow = { ...this.windowOf(s, online), events };
      for (const [node, i] of s.interest) {
        if (i.count <= 0) continue;
        let list = byNode.get(node);
        if (!list) byNode.set(node, list = []);
        list.push(w);
      }
    }
    this.dirty.clear();
    for (const [node, windows] of byNode) {
      roomMetrics.broadcasts.inc();
      this.opts.broadcast(node, windows);
    }
  }

  private windowOf(s: RoomState, online: number): RoomWindow {
    return {
      tenant: s.tenant, room: s.room, epoch: s.ring.epoch, earliest: s.ring.earliest, latest: s.ring.latest, truncated: false, more: false, events: [], online, promotedTo: s.promotedTo,
    };
  }

  /**
   * A node's connections joined the room (its count there now): the writer sends it the room from
   * now on. With a cursor (`after` ≠ 0) the answer replays after it, else it only names the window.
   */
  async join(tenant: Uuid, room: Uuid, unit: number, nodeId: string, count: number, after: bigint, limit = ROOM_REPLAY_PAGE_LIMIT): Promise<RoomWindow> {
    const s = await this.state(tenant, room, unit);
    s.interest.set(nodeId, { count, at: this.now() });
    return after === 0n ? this.windowOf(s, s.online(this.now())) : this.page(s, after, limit);
  }

  /** ROOM_REPLAY (spec 003 §1.4): the events after the cursor, or `truncated` with none (outside the window, another epoch). */
  async replay(tenant: Uuid, room: Uuid, unit: number, after: bigint, limit = ROOM_REPLAY_PAGE_LIMIT): Promise<RoomWindow> {
    const s = this.rooms.get(keyOf(tenant, room));
    const epoch = await this.opts.epochOf(unit);
    if (epoch === null) throw new StaleOwnerError(`room unit ${unit} is written by another node`, { kind: "room", unit });
    if (s && s.ring.epoch === epoch) return this.page(s, after, limit);
    // a room not open: what an empty ring of this epoch answers, and nothing is opened (a read changes nothing; a caller
    // replaying made-up room ids fills no writer's memory)
    if (!(limit >= 1 && limit <= ROOM_REPLAY_PAGE_LIMIT)) throw new InvalidArgumentError("limit", `1 to ${ROOM_REPLAY_PAGE_LIMIT}`);
    roomMetrics.replays.inc({ result: "truncated" });
    const empty = new RoomRing(epoch, 1, 1, this.counterOf(keyOf(tenant, room), epoch));
    return {
      tenant, room, epoch, earliest: empty.earliest, latest: empty.latest, truncated: after !== empty.latest, more: false, events: [], online: 0, promotedTo: "",
    };
  }

  private page(s: RoomState, after: bigint, limit: number): RoomWindow {
    if (!(limit >= 1 && limit <= ROOM_REPLAY_PAGE_LIMIT)) throw new InvalidArgumentError("limit", `1 to ${ROOM_REPLAY_PAGE_LIMIT}`);
    const now = this.now();
    const p = s.ring.replay(after, limit, now);
    if (p.truncated) roomMetrics.replays.inc({ result: "truncated" });
    else roomMetrics.replays.inc({ result: "replayed" });
    return { ...this.windowOf(s, s.online(now)), truncated: p.truncated, more: p.more, events: p.events };
  }

  /**
   * A node's counts of its connections per room (its refresh, every ROOM_INTEREST_REFRESH_MS):
   * rooms of units this node writes are taken up if new (a moved writer learns where to send);
   * the others are returned (their writer is elsewhere now).
   */
  async interest(nodeId: string, entries: readonly { tenant: Uuid; room: Uuid; unit: number; count: number }[]): Promise<number> {
    let stale = 0;
    const now = this.now();
    await Promise.all(entries.map(async (e) => {
      const existing = this.rooms.get(keyOf(e.tenant, e.room));
      if (!existing && e.count <= 0) return;
      try {
        const s = await this.state(e.tenant, e.room, e.unit);
        if (e.count > 0) s.interest.set(nodeId, { count: e.count, at: now });
        else s.interest.delete(nodeId);
      } catch (err) {
        if (!(err instanceof StaleOwnerError)) throw err;
        stale++;
      }
    }));
    return stale;
  }

  async describe(tenant: Uuid, room: Uuid, unit: number): Promise<RoomInfo> {
    const s = this.rooms.get(keyOf(tenant, room));
    const epoch = await this.opts.epochOf(unit);
    if (epoch === null) throw new StaleOwnerError(`room unit ${unit} is written by another node`, { kind: "room", unit });
    if (!s || s.ring.epoch !== epoch) throw new NotFoundError("room", `room ${room} is not open: nobody joined it or wrote to it since its writer started`);
    return this.infoOf(s);
  }

  private infoOf(s: RoomState): RoomInfo {
    const now = this.now();
    s.ring.evict(now);
    const online = s.online(now);
    return {
      tenant: s.tenant, room: s.room, writer: this.opts.nodeId, epoch: s.ring.epoch, earliest: s.ring.earliest, latest: s.ring.latest, kept: s.ring.size, online,
      nodes: [...s.interest].filter(([, i]) => i.count > 0).map(([nodeId, i]) => ({ nodeId, connections: i.count })).sort((a, b) => (a.nodeId < b.nodeId ? -1 : 1)),
      promotedTo: s.promotedTo, since: s.since,
    };
  }

  /** The rooms this node writes for a tenant, by room id after `after`, at most `limit`. */
  list(tenant: Uuid, after: string, limit: number): RoomInfo[] {
    const out: RoomState[] = [];
    for (const s of this.rooms.values()) if (s.tenant === tenant && s.room > after) out.push(s);
    out.sort((a, b) => (a.room < b.room ? -1 : 1));
    return out.slice(0, limit).map((s) => this.infoOf(s));
  }

  /** Marks the room promoted (its writer takes no more messages) and tells its connections, with a last window. */
  async markPromoted(tenant: Uuid, room: Uuid, unit: number, group: Uuid): Promise<RoomInfo> {
    const s = await this.state(tenant, room, unit);
    s.promotedTo = group;
    // an empty window that says so, to every node with connections in the room
    this.schedulePromotion(s);
    return this.infoOf(s);
  }

  private schedulePromotion(s: RoomState): void {
    const w = this.windowOf(s, s.online(this.now()));
    for (const [node, i] of s.interest) if (i.count > 0) this.opts.broadcast(node, [w]);
  }

  /** The node gave the unit up (or lost it): its rooms' rings go with it (spec 003 §1.3: never handed over). */
  dropUnit(unit: number): void {
    for (const [key, s] of this.rooms) if (s.unit === unit) this.drop(key, s);
  }

  /** Forgets rooms nobody is in and whose ring is empty (evicted): a room is open while it has connections or messages to replay. */
  sweep(): void {
    const now = this.now();
    for (const [key, s] of this.rooms) {
      s.ring.evict(now);
      if (s.online(now) === 0 && s.ring.size === 0 && s.outbound.length === 0) this.drop(key, s);
    }
  }
}
