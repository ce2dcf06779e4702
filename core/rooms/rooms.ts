import {
  FailedPreconditionError, IdempotencyConflictError, InvalidArgumentError, MAX_ROOMS_PER_CONNECTION, NotFoundError, QimError, ROOM_INTEREST_REFRESH_MS, ROOM_MAX_PAYLOAD_BYTES, ROOM_REPLAY_PAGE_LIMIT,
  type KeySpace, type Uuid,
} from "../base/index.js";
import type { ClusterMembership } from "../cluster/index.js";
import type { RedisStore } from "../store/index.js";
import { roomEpochKey, roomPromotedKey, roomUnitOf } from "./keys.js";
import { LocalRooms, type RoomConnection } from "./local.js";
import { roomMetrics } from "./metrics.js";
import { epochOfToken, type RoomRecord } from "./ring.js";
import { RoomPromotedError, RoomRateLimitedError, RoomWriters, type PublishRequest, type RoomInfo, type RoomWindow } from "./writer.js";

/** Rooms one `room list` page names, at most. */
export const ROOM_LIST_LIMIT = 500;
/** Rooms' counts one interest call carries, at most: a node with many rooms on one writer sends several calls. */
export const ROOM_INTEREST_BATCH = 1000;

/** A call to the writer of a room's unit (routed to the unit's owner). */
export type WriterCall =
  | { kind: "publish"; unit: number; req: PublishRequest; count: number }
  | { kind: "join"; unit: number; tenant: Uuid; room: Uuid; count: number; after: bigint }
  | { kind: "replay"; unit: number; tenant: Uuid; room: Uuid; after: bigint; limit: number }
  | { kind: "describe"; unit: number; tenant: Uuid; room: Uuid }
  | { kind: "promote"; unit: number; tenant: Uuid; room: Uuid; group: Uuid };

/** A call to one node. */
export type NodeCall =
  | { kind: "interest"; entries: { tenant: Uuid; room: Uuid; unit: number; count: number }[] }
  | { kind: "broadcast"; windows: RoomWindow[] }
  | { kind: "list"; tenant: Uuid; after: string; limit: number }
  | { kind: "users"; tenant: Uuid; room: Uuid; limit: number };

export type RoomCall = WriterCall | NodeCall;

export type RoomAnswer =
  | { kind: "record"; record: RoomRecord }
  | { kind: "window"; window: RoomWindow }
  | { kind: "info"; info: RoomInfo }
  | { kind: "infos"; infos: RoomInfo[] }
  | { kind: "users"; users: Uuid[] }
  | { kind: "count"; n: number };

/** How rooms reach other nodes (node RPC `Rooms`); set by the node's RPC listener. Without one, this node writes every room. */
export interface RoomTransport {
  /** To the writer of `unit`: resolved, and on a stale owner re-resolved and retried once. */
  writer(unit: number, call: WriterCall): Promise<RoomAnswer>;
  /** To one node by id. */
  node(nodeId: string, call: NodeCall): Promise<RoomAnswer>;
  /** The unit's writer as the registry names it (cached), or null. */
  ownerOf(unit: number): Promise<string | null>;
}

/** A room error as it crossed a node: the same class again (its code, message and details). */
export function roomErrorOf(code: string, message: string, details: Record<string, unknown>): QimError {
  if (code === "RATE_LIMITED") return new RoomRateLimitedError(Number(details.retryAfterMs ?? 1000));
  if (code === "FAILED_PRECONDITION" && typeof details.group === "string") return new RoomPromotedError(details.group as Uuid);
  if (code === "NOT_FOUND") return new NotFoundError("room", message);
  if (code === "INVALID_ARGUMENT") return new InvalidArgumentError(String(details.field ?? "room"), message);
  if (code === "IDEMPOTENCY_CONFLICT") return new IdempotencyConflictError(String(details.clientMessageId ?? ""), 0);
  return new QimError(code === "FAILED_PRECONDITION" ? "FAILED_PRECONDITION" : "UNAVAILABLE", message, details);
}

export interface RoomsOptions {
  ringMaxItems?: number;
  retentionMs?: number;
  /** room_msg_rate and its burst (tests). */
  rate?: number;
  burst?: number;
  frameRate?: number;
  /** ROOM_FLUSH_SHARE_PERCENT (setting rooms.flush_share_percent). */
  flushSharePercent?: number;
  maxRoomsPerConnection?: number;
  interestRefreshMs?: number;
  log?: (line: string) => void;
}

/**
 * Chat rooms (spec 003 §1, issue 28): messages with a room_seq and no conversation_seq, broadcast
 * to the room's connections online now and kept for a short replay in the writer's memory — no
 * mailbox entry, no conversation list, no unread, no push. Each room has one writer at a time (the
 * owner of its room unit, core/cluster); every node keeps its own connections' rooms (LocalRooms)
 * and tells the writers how many it holds, so that a writer sends one merged batch to each node
 * with any and none to the others. docs/rooms.md.
 */
export class Rooms {
  readonly local: LocalRooms;
  readonly writers: RoomWriters;
  private transport: RoomTransport | null = null;
  private readonly nodeId: string;
  /** Without a cluster: this process's epoch (soloEpoch). */
  private solo: Promise<number> | null = null;
  /** Per target node: the windows waiting while a call to it is in flight (one at a time: a node gets a room's windows in order). */
  private readonly outbox = new Map<string, { busy: boolean; windows: RoomWindow[] }>();
  /** Rooms that lost their last connection here since the last refresh: their writers hear a count of 0. */
  private readonly emptied = new Map<string, { tenant: Uuid; room: Uuid }>();
  private timer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> = Promise.resolve();

  constructor(private readonly store: RedisStore, private readonly keys: KeySpace, private readonly cluster: ClusterMembership | null, private readonly opts: RoomsOptions = {}) {
    this.nodeId = cluster?.nodeId ?? "";
    this.local = new LocalRooms({
      ...(opts.frameRate ? { frameRate: opts.frameRate } : {}),
      ...(opts.flushSharePercent ? { flushSharePercent: opts.flushSharePercent } : {}),
      ...(opts.maxRoomsPerConnection ? { maxRoomsPerConnection: opts.maxRoomsPerConnection } : {}),
      onEmpty: (tenant, room) => this.emptied.set(`${tenant}/${room}`, { tenant, room }),
    });
    this.writers = new RoomWriters({
      nodeId: this.nodeId,
      epochOf: (unit) => this.epochOf(unit),
      broadcast: (nodeId, windows) => this.send(nodeId, windows),
      promotedGroup: async (tenant, room) => {
        const key = roomPromotedKey(this.keys, tenant, room);
        return (await this.store.clientForKey(key).get(key)) as Uuid | null;
      },
      ...(opts.ringMaxItems ? { ringMaxItems: opts.ringMaxItems } : {}),
      ...(opts.retentionMs ? { retentionMs: opts.retentionMs } : {}),
      ...(opts.rate ? { rate: opts.rate } : {}),
      ...(opts.burst ? { burst: opts.burst } : {}),
    });
    // a room unit given up or lost: its rooms' rings go (never handed over: the next writer starts a new epoch)
    cluster?.onChange((kind, unit, owned) => { if (kind === "room" && !owned) this.writers.dropUnit(unit); });
  }

  /** Set by the node's RPC listener: how rooms reach the other nodes. */
  setTransport(t: RoomTransport): void {
    this.transport = t;
  }

  /**
   * The epoch of the rooms of a unit this node writes: the unit lease's token (a cluster); without
   * a cluster one epoch for every unit, taken once per process at start (an INCR: a restarted
   * process writes with a higher one, and no request ever writes for it); null when another node
   * writes the unit.
   */
  private async epochOf(unit: number): Promise<number | null> {
    if (this.cluster) {
      const token = this.cluster.tokenOf("room", unit);
      return token !== null && this.cluster.owns("room", unit) ? epochOfToken(token) : null;
    }
    return this.soloEpoch();
  }

  private soloEpoch(): Promise<number> {
    if (!this.solo) {
      const key = roomEpochKey(this.keys);
      this.solo = this.store.clientForKey(key).incr(key).then(epochOfToken);
      this.solo.catch(() => { this.solo = null; });
    }
    return this.solo;
  }

  async start(): Promise<void> {
    if (!this.cluster) await this.soloEpoch();
    const every = this.opts.interestRefreshMs ?? ROOM_INTEREST_REFRESH_MS;
    const tick = () => {
      this.refreshing = this.refresh().catch((err: unknown) => this.opts.log?.(`rooms: interest refresh failed: ${(err as Error).message}`));
      this.writers.sweep();
    };
    this.timer = setInterval(tick, every);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.local.stop();
    await this.refreshing;
  }

  // ---- the writer side, reached in process or through the transport ----

  private toWriter(unit: number, call: WriterCall): Promise<RoomAnswer> {
    return this.transport ? this.transport.writer(unit, call) : this.serve(call, this.nodeId);
  }

  /** Serves a call from a node (this one included): writer calls need this node to write the room's unit (StaleOwnerError otherwise). */
  async serve(call: RoomCall, fromNode: string): Promise<RoomAnswer> {
    switch (call.kind) {
      case "publish": return { kind: "record", record: await this.writers.publish(call.req, call.unit, fromNode, call.count) };
      case "join": return { kind: "window", window: await this.writers.join(call.tenant, call.room, call.unit, fromNode, call.count, call.after) };
      case "replay": return { kind: "window", window: await this.writers.replay(call.tenant, call.room, call.unit, call.after, call.limit) };
      case "describe": return { kind: "info", info: await this.writers.describe(call.tenant, call.room, call.unit) };
      case "promote": return { kind: "info", info: await this.writers.markPromoted(call.tenant, call.room, call.unit, call.group) };
      case "interest": return { kind: "count", n: await this.writers.interest(fromNode, call.entries) };
      case "broadcast":
        this.local.receive(call.windows);
        return { kind: "count", n: call.windows.length };
      case "list": return { kind: "infos", infos: this.writers.list(call.tenant, call.after, call.limit) };
      case "users": return { kind: "users", users: this.local.usersOf(call.tenant, call.room).slice(0, call.limit) };
    }
  }

  /** A writer's windows to a node: one call in flight per node, the windows of the calls meanwhile sent together next (a node gets each room's in order). */
  private send(nodeId: string, windows: RoomWindow[]): void {
    if (nodeId === this.nodeId || !this.transport) {
      this.local.receive(windows);
      return;
    }
    let q = this.outbox.get(nodeId);
    if (!q) this.outbox.set(nodeId, q = { busy: false, windows: [] });
    q.windows.push(...windows);
    if (!q.busy) void this.drain(nodeId, q);
  }

  private async drain(nodeId: string, q: { busy: boolean; windows: RoomWindow[] }): Promise<void> {
    q.busy = true;
    try {
      while (q.windows.length > 0) {
        const batch = q.windows;
        q.windows = [];
        try {
          await this.transport!.node(nodeId, { kind: "broadcast", windows: batch });
        } catch (err) {
          // the node's connections miss these: their next window shows the gap, which a ROOM_REPLAY fills (spec 003 §1.4)
          roomMetrics.broadcastsFailed.inc();
          this.opts.log?.(`rooms: a batch to node ${nodeId} failed: ${(err as Error).message}`);
        }
      }
    } finally {
      q.busy = false;
      if (q.windows.length === 0) this.outbox.delete(nodeId);
    }
  }

  /** Every node's counts of its connections per room, to the rooms' writers: one call per writer node. */
  async refresh(): Promise<void> {
    const entries = this.local.counts().map((c) => ({ ...c, unit: roomUnitOf(c.tenant, c.room) }));
    for (const e of this.emptied.values()) if (this.local.countOf(e.tenant, e.room) === 0) entries.push({ ...e, unit: roomUnitOf(e.tenant, e.room), count: 0 });
    this.emptied.clear();
    if (entries.length === 0) return;
    if (!this.transport) {
      await this.writers.interest(this.nodeId, entries);
      return;
    }
    // each unit's writer looked up once (many rooms share a unit), then the counts per writer node in bounded calls
    const units = [...new Set(entries.map((e) => e.unit))];
    const owners = new Map(await Promise.all(units.map(async (u) => [u, await this.transport!.ownerOf(u).catch(() => null)] as const)));
    const byOwner = new Map<string, typeof entries>();
    for (const e of entries) {
      const owner = owners.get(e.unit);
      if (!owner) continue;
      let list = byOwner.get(owner);
      if (!list) byOwner.set(owner, list = []);
      list.push(e);
    }
    await Promise.all([...byOwner].map(async ([owner, list]) => {
      try {
        for (let i = 0; i < list.length; i += ROOM_INTEREST_BATCH) {
          const part = list.slice(i, i + ROOM_INTEREST_BATCH);
          if (owner === this.nodeId) await this.writers.interest(owner, part);
          else await this.transport!.node(owner, { kind: "interest", entries: part });
        }
      } catch (err) {
        this.opts.log?.(`rooms: counts to node ${owner} failed: ${(err as Error).message}`);
      }
    }));
  }

  // ---- what a door asks ----

  /**
   * A connection joins a room (ROOM_JOIN): into this node's index (max_rooms_per_connection), and
   * the writer learns this node's count. With a cursor the answer replays after it (or says
   * `truncated`); without (0), it names the window to start from.
   */
  async join(conn: RoomConnection, room: Uuid, after: bigint): Promise<RoomWindow> {
    const added = this.local.add(conn, room);
    roomMetrics.joins.inc({ result: added });
    if (added === "full") throw new FailedPreconditionError(`a connection is in at most ${this.opts.maxRoomsPerConnection ?? MAX_ROOMS_PER_CONNECTION} rooms at a time (max_rooms_per_connection): leave one first`);
    const unit = roomUnitOf(conn.tenant, room);
    try {
      const a = await this.toWriter(unit, { kind: "join", unit, tenant: conn.tenant, room, count: this.local.countOf(conn.tenant, room), after });
      const w = answerOf(a, "window").window;
      this.local.setEpoch(conn, room, w.epoch);
      return w;
    } catch (err) {
      if (added === "added") this.local.remove(conn, room);
      throw err;
    }
  }

  /** A connection leaves a room (ROOM_LEAVE); false when it was not in it. */
  leave(conn: RoomConnection, room: Uuid): boolean {
    return this.local.remove(conn, room);
  }

  /** A connection closed: out of all its rooms (their writers hear the new counts with the next refresh). */
  closed(conn: RoomConnection): void {
    this.local.removeAll(conn);
  }

  /** ROOM_REPLAY (spec 003 §1.4): the events after a cursor from the writer's ring, or `truncated`. */
  async replay(tenant: Uuid, room: Uuid, after: bigint, limit = ROOM_REPLAY_PAGE_LIMIT): Promise<RoomWindow> {
    const unit = roomUnitOf(tenant, room);
    return answerOf(await this.toWriter(unit, { kind: "replay", unit, tenant, room, after, limit }), "window").window;
  }

  /** ROOM_SEND: the writer takes it (room_msg_rate) and broadcasts it; the answer is its room_seq. */
  async publish(req: PublishRequest): Promise<RoomRecord> {
    if (req.payload.byteLength > ROOM_MAX_PAYLOAD_BYTES) throw new InvalidArgumentError("payload", `a room message is at most ${ROOM_MAX_PAYLOAD_BYTES} bytes, not ${req.payload.byteLength}`);
    if (!/^[\x21-\x7e]{1,128}$/.test(req.contentType)) throw new InvalidArgumentError("content_type", "content_type is 1 to 128 printable ASCII characters");
    const unit = roomUnitOf(req.tenant, req.room);
    return answerOf(await this.toWriter(unit, { kind: "publish", unit, req, count: this.local.countOf(req.tenant, req.room) }), "record").record;
  }

  /** A room as its writer sees it (online count, epoch, window); NOT_FOUND when it is not open. */
  async describe(tenant: Uuid, room: Uuid): Promise<RoomInfo> {
    const unit = roomUnitOf(tenant, room);
    return answerOf(await this.toWriter(unit, { kind: "describe", unit, tenant, room }), "info").info;
  }

  /** The open rooms of a tenant across the live nodes, by room id after `after`, at most `limit`. */
  async list(tenant: Uuid, after: string, limit: number): Promise<RoomInfo[]> {
    if (!(Number.isInteger(limit) && limit >= 1 && limit <= ROOM_LIST_LIMIT)) throw new InvalidArgumentError("limit", `1 to ${ROOM_LIST_LIMIT}`);
    const nodes = this.cluster && this.transport ? [...this.cluster.liveNodes().keys()] : [this.nodeId];
    const pages = await Promise.all(nodes.map(async (n) => (n === this.nodeId ? this.writers.list(tenant, after, limit) : answerOf(await this.transport!.node(n, { kind: "list", tenant, after, limit }), "infos").infos)));
    return pages.flat().sort((a, b) => (a.room < b.room ? -1 : 1)).slice(0, limit);
  }

  /**
   * The users with a connection in the room (as its writer described it), on every node that holds
   * some, at most `limit` from each node (a promotion's members: more than a group is created with is refused anyway).
   */
  async onlineUsers(info: RoomInfo, limit: number): Promise<Uuid[]> {
    const { tenant, room } = info;
    const lists = await Promise.all(info.nodes.map(async (n) => (n.nodeId === this.nodeId || !this.transport
      ? this.local.usersOf(tenant, room).slice(0, limit)
      : answerOf(await this.transport.node(n.nodeId, { kind: "users", tenant, room, limit }), "users").users)));
    return [...new Set(lists.flat())].sort();
  }

  /**
   * Promotion (spec 003 §1.6) after the group was created with the room's id: the room takes no
   * more messages (its writer, and any later one, reads the mark) and its connections get a last
   * window naming the group.
   */
  async markPromoted(tenant: Uuid, room: Uuid, group: Uuid): Promise<RoomInfo> {
    const key = roomPromotedKey(this.keys, tenant, room);
    await this.store.clientForKey(key).set(key, group);
    const unit = roomUnitOf(tenant, room);
    return answerOf(await this.toWriter(unit, { kind: "promote", unit, tenant, room, group }), "info").info;
  }
}

function answerOf<K extends RoomAnswer["kind"]>(a: RoomAnswer, kind: K): Extract<RoomAnswer, { kind: K }> {
  if (a.kind !== kind) throw new QimError("INTERNAL", `a room call was answered with ${a.kind}, not ${kind}`);
  return a as Extract<RoomAnswer, { kind: K }>;
}
