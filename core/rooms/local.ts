import { MAX_ROOMS_PER_CONNECTION, ROOM_FLUSH_SHARE_PERCENT, ROOM_OUTBOUND_FRAME_RATE, type Uuid } from "../base/index.js";
import { roomMetrics } from "./metrics.js";
import type { RoomWindow } from "./writer.js";

/**
 * A window as a connection gets it: shared by every connection of the room on this node that gets
 * the same one, so the door encodes it once (`encoded`) and each socket gets only its frame header
 * (spec 003 §1.2 step 5).
 */
export interface RoomPush extends RoomWindow {
  encoded?: Uint8Array;
  /** The door's whole frame when this window goes alone (a connection in one room with messages): made once too. */
  frame?: Uint8Array;
}

/** One device connection as the rooms see it (the gateway's connection implements it). */
export interface RoomConnection {
  readonly tenant: Uuid;
  readonly user: Uuid;
  readonly device: string;
  /** One ROOM_BATCH frame with these windows (one per room); false when the connection did not take it (slow, closing). */
  pushRooms(windows: readonly RoomPush[]): boolean;
}

class LocalRoom {
  /** Its connections here, each with the epoch it last got (a window of another epoch is `truncated` for it). */
  readonly conns = new Map<RoomConnection, number>();
  /** Windows the writer sent since the last frame interval. */
  pending: RoomWindow[] = [];
  /** The newest room_seq sent to this room's connections here: an older one arriving late is not sent again. */
  last = 0n;
  constructor(readonly tenant: Uuid, readonly room: Uuid) {}
}

const keyOf = (tenant: Uuid, room: Uuid) => `${tenant}/${room}`;

/** Connections written to in one turn of the event loop when a frame interval's ROOM_BATCHes go out. */
export const ROOM_FLUSH_SLICE = 128;
/**
 * And for at most this long (ms), whichever comes first: a turn's writes are timed, not counted,
 * since one TLS frame costs 10–200 µs by the machine and the socket (bench/rooms).
 */
export const ROOM_FLUSH_TURN_MS = 1;

/**
 * This node's half of the rooms (spec 003 §1.2 "ConnectionNode"): the in-memory room → connections
 * index (never persisted: it lives and dies with the connections), and the outbound side. What the
 * writers send waits for the node's next frame interval (1 / room_outbound_frame_rate); then each
 * connection gets one ROOM_BATCH with a window per room of its that had messages — so a connection
 * gets at most room_outbound_frame_rate room frames a second however many messages its rooms take,
 * and a window's bytes are made once for all of its connections.
 */
export class LocalRooms {
  private readonly rooms = new Map<string, LocalRoom>();
  private readonly byConn = new Map<RoomConnection, Set<LocalRoom>>();
  private readonly dirty = new Set<LocalRoom>();
  private readonly intervalMs: number;
  private lastFlush = -Infinity;
  private timer: NodeJS.Timeout | undefined;
  /** Windows of connections whose last frame was less than an interval ago: they go in the next. */
  private readonly held = new Map<RoomConnection, RoomPush[]>();
  /** When each connection got its last room frame (performance.now()). */
  private readonly lastSent = new WeakMap<RoomConnection, number>();
  /** A frame interval's writes are going out (a slice per turn): the next interval waits for them. */
  private flushing = false;
  private stopped = false;

  /** ROOM_FLUSH_SHARE_PERCENT as a fraction. */
  private readonly share: number;

  constructor(private readonly opts: { frameRate?: number; maxRoomsPerConnection?: number; flushSharePercent?: number; onEmpty?: (tenant: Uuid, room: Uuid) => void } = {}) {
    this.intervalMs = 1000 / (opts.frameRate ?? ROOM_OUTBOUND_FRAME_RATE);
    this.share = (opts.flushSharePercent ?? ROOM_FLUSH_SHARE_PERCENT) / 100;
  }

  /** Rooms with connections here. */
  get size(): number {
    return this.rooms.size;
  }

  /** Adds a connection to a room: "full" when it is in max_rooms_per_connection rooms already (nothing changed). */
  add(conn: RoomConnection, room: Uuid): "added" | "already" | "full" {
    const key = keyOf(conn.tenant, room);
    let r = this.rooms.get(key);
    if (r?.conns.has(conn)) return "already";
    let mine = this.byConn.get(conn);
    if ((mine?.size ?? 0) >= (this.opts.maxRoomsPerConnection ?? MAX_ROOMS_PER_CONNECTION)) return "full";
    if (!r) this.rooms.set(key, r = new LocalRoom(conn.tenant, room));
    r.conns.set(conn, 0);
    if (!mine) this.byConn.set(conn, mine = new Set());
    mine.add(r);
    this.observe();
    return "added";
  }

  /** The epoch a connection was told by its JOIN's answer: windows of it continue what it has. */
  setEpoch(conn: RoomConnection, room: Uuid, epoch: number): void {
    const r = this.rooms.get(keyOf(conn.tenant, room));
    if (r?.conns.has(conn)) r.conns.set(conn, epoch);
  }

  has(conn: RoomConnection, room: Uuid): boolean {
    return this.rooms.get(keyOf(conn.tenant, room))?.conns.has(conn) ?? false;
  }

  /** Removes a connection from a room; false when it was not in it. */
  remove(conn: RoomConnection, room: Uuid): boolean {
    const r = this.rooms.get(keyOf(conn.tenant, room));
    if (!r?.conns.delete(conn)) return false;
    // a window of the room held for its next interval is not sent after the leave
    const held = this.held.get(conn)?.filter((w) => w.room !== room);
    if (held && held.length > 0) this.held.set(conn, held);
    else this.held.delete(conn);
    const mine = this.byConn.get(conn);
    mine?.delete(r);
    if (mine?.size === 0) this.byConn.delete(conn);
    this.forgetIfEmpty(r);
    this.observe();
    return true;
  }

  /** A connection closed: out of every room. Returns the rooms it was in. */
  removeAll(conn: RoomConnection): Uuid[] {
    this.held.delete(conn);
    const mine = this.byConn.get(conn);
    if (!mine) return [];
    this.byConn.delete(conn);
    for (const r of mine) {
      r.conns.delete(conn);
      this.forgetIfEmpty(r);
    }
    this.observe();
    return [...mine].map((r) => r.room);
  }

  private forgetIfEmpty(r: LocalRoom): void {
    if (r.conns.size > 0) return;
    this.rooms.delete(keyOf(r.tenant, r.room));
    this.dirty.delete(r);
    this.opts.onEmpty?.(r.tenant, r.room);
  }

  /** How many connections here are in each room (the interest refresh to the writers). */
  counts(): { tenant: Uuid; room: Uuid; count: number }[] {
    return [...this.rooms.values()].map((r) => ({ tenant: r.tenant, room: r.room, count: r.conns.size }));
  }

  /** The connection count of one room here. */
  countOf(tenant: Uuid, room: Uuid): number {
    return this.rooms.get(keyOf(tenant, room))?.conns.size ?? 0;
  }

  /** The users with a connection in the room here (a promotion's members). */
  usersOf(tenant: Uuid, room: Uuid): Uuid[] {
    const r = this.rooms.get(keyOf(tenant, room));
    return r ? [...new Set([...r.conns.keys()].map((c) => c.user))] : [];
  }

  /** Windows from a writer: they go out at the next frame interval. Windows of rooms with no connection here are dropped. */
  receive(windows: readonly RoomWindow[]): void {
    for (const w of windows) {
      const r = this.rooms.get(keyOf(w.tenant, w.room));
      if (!r) {
        roomMetrics.windowsDropped.inc();
        continue;
      }
      r.pending.push(w);
      this.dirty.add(r);
    }
    this.schedule();
  }

  private schedule(): void {
    if (this.timer || this.flushing || this.stopped || (this.dirty.size === 0 && this.held.size === 0)) return;
    const wait = Math.max(0, this.lastFlush + this.intervalMs - performance.now());
    this.timer = setTimeout(() => {
      this.timer = undefined;
      // a timer may fire a little early: a frame interval is never shorter than 1 / rate
      if (performance.now() < this.lastFlush + this.intervalMs) {
        this.schedule();
        return;
      }
      this.flush();
    }, wait);
  }

  /** One frame interval: each connection of a room with windows gets one ROOM_BATCH with all of its rooms' windows. */
  private flush(): void {
    this.lastFlush = performance.now();
    // what a connection could not get last interval (its previous frame was too recent) goes first
    const perConn = new Map<RoomConnection, RoomPush[]>(this.held);
    this.held.clear();
    for (const r of this.dirty) {
      const got = r.pending;
      r.pending = [];
      const merged = mergeWindows(got, r.last);
      if (!merged) continue;
      if (got.length > 1) roomMetrics.merged.inc(got.length - 1);
      r.last = merged.latest;
      let cut: RoomPush | undefined;
      for (const [conn, epoch] of r.conns) {
        let w: RoomPush = merged;
        // epoch 0: its JOIN's answer has not come back yet (it names this epoch): nothing of an older one to cut
        if (epoch !== 0 && epoch !== merged.epoch && !merged.truncated) {
          // the writer restarted or moved since this connection's last window: what it has does not continue (spec 003 §1.3)
          cut ??= { ...merged, truncated: true };
          w = cut;
        }
        r.conns.set(conn, merged.epoch);
        let list = perConn.get(conn);
        if (!list) perConn.set(conn, list = []);
        // a window of this room held from the last interval: one window per room in a frame, the two merged
        const at = list.findIndex((x) => x.room === w.room);
        if (at < 0) list.push(w);
        else list[at] = mergeWindows([list[at]!, w]) ?? w;
      }
    }
    this.dirty.clear();
    // the writes go a slice at a time, each in its own turn of the event loop: a room of 5,000
    // connections does not hold the node's other work (a 1:1 message's push, spec 003 C-3) for the
    // whole interval's writes, and between slices the node rests so that room writes take at most
    // ROOM_FLUSH_SHARE_PERCENT of its time; the next interval starts once the last slice is out
    const conns = [...perConn];
    this.flushing = true;
    const slice = (from: number) => {
      let frames = 0;
      const limit = Math.min(conns.length, from + ROOM_FLUSH_SLICE);
      const began = performance.now();
      const until = began + ROOM_FLUSH_TURN_MS;
      let to = from;
      for (let i = from; i < limit && (i === from || performance.now() < until); i++, to = i) {
        const [conn, windows] = conns[i]!;
        const now = performance.now();
        // a connection written late in the last interval and early in this one waits: never two frames within 1 / rate
        if (now - (this.lastSent.get(conn) ?? -Infinity) < this.intervalMs) {
          this.held.set(conn, windows);
          continue;
        }
        if (conn.pushRooms(windows)) frames++;
        // after the write: the next one to this connection is a whole interval after this one ended
        this.lastSent.set(conn, performance.now());
      }
      roomMetrics.frames.inc(frames);
      if (to < conns.length && !this.stopped) {
        // the room's share of the node's time: the next turn waits in proportion to this one
        const now = performance.now();
        const rest = (now - began) * (1 - this.share) / this.share;
        if (rest < 1) {
          setImmediate(() => slice(to));
          return;
        }
        // a timer counts from the loop's time at the start of this turn, before these writes: it
        // may fire early by as much as they took — so it checks, and waits the rest
        // (held in `timer`, so that stop() ends the flush: nothing is written after it)
        const resume = now + rest;
        const wake = () => {
          this.timer = undefined;
          if (this.stopped) return;
          const left = resume - performance.now();
          if (left >= 1) this.timer = setTimeout(wake, left); else slice(to);
        };
        this.timer = setTimeout(wake, rest);
        return;
      }
      this.flushing = false;
      this.schedule();
    };
    slice(0);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private observe(): void {
    roomMetrics.localRooms.set(this.rooms.size);
  }
}

/**
 * The windows one room got in a frame interval, as one: the events in room_seq order, none at or
 * below `sent` (what this node sent the room already, of the same epoch), none of an older epoch
 * than the newest window's (the writer moved: the result is `truncated`); the newest window's
 * positions. Null when nothing is left to send.
 */
export function mergeWindows(windows: readonly RoomWindow[], sent = 0n): RoomWindow | null {
  if (windows.length === 0) return null;
  let newest = windows[0]!;
  for (const w of windows) if (w.epoch > newest.epoch || (w.epoch === newest.epoch && w.latest >= newest.latest)) newest = w;
  const same = windows.filter((w) => w.epoch === newest.epoch);
  const events = same.flatMap((w) => w.events).filter((e) => e.roomSeq > sent).sort((a, b) => (a.roomSeq < b.roomSeq ? -1 : a.roomSeq > b.roomSeq ? 1 : 0));
  const unique = events.filter((e, i) => i === 0 || e.roomSeq !== events[i - 1]!.roomSeq);
  const truncated = same.length < windows.length || same.some((w) => w.truncated);
  if (unique.length === 0 && !truncated && newest.promotedTo === "" && same.every((w) => w.events.length > 0)) return null;
  return { ...newest, events: unique, truncated, more: false };
}
