import { MAX_PRESENCE_SUBSCRIPTIONS_PER_CONNECTION, PRESENCE_PUSH_MERGE_WINDOW_MS, FailedPreconditionError, type Uuid } from "../base/index.js";
import { presenceMetrics as metrics } from "./metrics.js";

/** A user's online state as a PRESENCE_UPDATE says it: absolute (online somewhere in the cluster, or not). */
export interface PresenceState {
  user: Uuid;
  online: boolean;
}

/** A device connection as presence sees it (the gateway's connection implements it). */
export interface PresenceConnection {
  readonly tenant: Uuid;
  /** The subscriber (who must still be a member of a group to be told of its members through it). */
  readonly user: Uuid;
  /** Pushes one PRESENCE_UPDATE with these states; false when the connection did not take it (slow, closing). */
  pushPresence(states: readonly PresenceState[]): boolean;
}

/** One watched user of one connection: through which groups it was allowed, and what the connection was last told. */
interface Watch {
  groups: Set<Uuid>;
  told: boolean;
}

/** One connection's subscriptions and its merge window. */
interface ConnectionState {
  watches: Map<Uuid, Watch>;
  /** (group, user) pairs held (what MAX_PRESENCE_SUBSCRIPTIONS_PER_CONNECTION counts). */
  count: number;
  /** Users whose state changed since the last frame (the frame carries their state at its time). */
  pending: Set<Uuid>;
  lastSentAt: number;
  timer: NodeJS.Timeout | undefined;
  /** A frame's memberships are being checked: changes meanwhile wait for the next frame. */
  vetting: boolean;
}

/** What LocalPresence asks of its owner around a frame. */
export interface LocalPresenceHooks {
  /**
   * Before a PRESENCE_UPDATE goes out: for each group, which of these users the connection may
   * still be told of through it (its subscriber and they are ACTIVE members now). A pair left out
   * ends; a rejection holds the frame (nothing is told) until the next window.
   */
  vet?(conn: PresenceConnection, byGroup: ReadonlyMap<Uuid, readonly Uuid[]>): Promise<ReadonlyMap<Uuid, ReadonlySet<Uuid>>>;
  /** Users no connection here watches any more since pairs ended at a check (their watch entries go). */
  unwatched?(tenant: Uuid, users: Uuid[]): void;
}

/**
 * This node's presence subscriptions (never stored): connection → watched users, user → the
 * connections watching, the state each user was last read in, and each connection's merge window
 * (PRESENCE_PUSH_MERGE_WINDOW_MS: at most one PRESENCE_UPDATE in it, with the last state of each user
 * that changed; a user back in the state the connection was last told is not in it). With a
 * `vet` hook, each frame's (group, user) pairs are checked first: a subscriber who left the group,
 * or a watched user who did, is told nothing more through it.
 */
export class LocalPresence {
  private readonly conns = new Map<PresenceConnection, ConnectionState>();
  /** tenant + user → the user and the connections here watching it. */
  private readonly watchers = new Map<string, { tenant: Uuid; user: Uuid; conns: Set<PresenceConnection> }>();
  /** tenant + user → the state last read (every watched user has one). */
  private readonly known = new Map<string, boolean>();
  private subscriptions = 0;

  constructor(
    private readonly windowMs = PRESENCE_PUSH_MERGE_WINDOW_MS, private readonly maxPerConnection = MAX_PRESENCE_SUBSCRIPTIONS_PER_CONNECTION,
    private readonly hooks: LocalPresenceHooks = {},
  ) {}

  /** How many (group, user) pairs `conn` would hold with these added (nothing changes). */
  wouldHold(conn: PresenceConnection, group: Uuid, users: readonly Uuid[]): number {
    const st = this.conns.get(conn);
    let n = st?.count ?? 0;
    for (const u of users) if (!st?.watches.get(u)?.groups.has(group)) n++;
    return n;
  }

  /** Refuses (FAILED_PRECONDITION, nothing changed) what would take `conn` past MAX_PRESENCE_SUBSCRIPTIONS_PER_CONNECTION. */
  checkRoom(conn: PresenceConnection, group: Uuid, users: readonly Uuid[]): void {
    if (this.wouldHold(conn, group, users) > this.maxPerConnection) {
      metrics.refused.inc({ reason: "max_subscriptions" });
      throw new FailedPreconditionError(`a connection holds at most ${this.maxPerConnection} presence subscriptions (MAX_PRESENCE_SUBSCRIPTIONS_PER_CONNECTION): unsubscribe some first`);
    }
  }

  /**
   * Adds `conn`'s subscriptions to `users` through `group`, each told `states` (what the answer
   * says). Returns the users no connection here watched before (the caller registers them). A user
   * already known here in another state than the answer's gets a PRESENCE_UPDATE through the window.
   */
  add(conn: PresenceConnection, group: Uuid, states: readonly PresenceState[]): Uuid[] {
    let st = this.conns.get(conn);
    if (!st) this.conns.set(conn, st = { watches: new Map(), count: 0, pending: new Set(), lastSentAt: 0, timer: undefined, vetting: false });
    const fresh: Uuid[] = [];
    for (const { user, online } of states) {
      const key = conn.tenant + user;
      let w = st.watches.get(user);
      if (!w) {
        st.watches.set(user, w = { groups: new Set(), told: online });
        let entry = this.watchers.get(key);
        if (!entry) {
          this.watchers.set(key, entry = { tenant: conn.tenant, user, conns: new Set() });
          fresh.push(user);
        }
        entry.conns.add(conn);
      } else {
        w.told = online;
        st.pending.delete(user);
      }
      if (!w.groups.has(group)) {
        w.groups.add(group);
        st.count++;
        this.subscriptions++;
      }
      const known = this.known.get(key);
      if (known === undefined) this.known.set(key, online);
      else if (known !== online) this.mark(conn, st, user);
    }
    this.observe();
    return fresh;
  }

  /** Ends `conn`'s subscriptions through `group` to `users` (all of the group's when null). Returns the users no connection here watches any more. */
  remove(conn: PresenceConnection, group: Uuid, users: readonly Uuid[] | null): { removed: number; gone: Uuid[] } {
    const st = this.conns.get(conn);
    if (!st) return { removed: 0, gone: [] };
    const r = this.removePairs(conn, st, group, users ?? [...st.watches.keys()]);
    if (st.watches.size === 0) this.drop(conn, st);
    this.observe();
    return r;
  }

  private removePairs(conn: PresenceConnection, st: ConnectionState, group: Uuid, users: readonly Uuid[]): { removed: number; gone: Uuid[] } {
    const gone: Uuid[] = [];
    let removed = 0;
    for (const user of users) {
      const w = st.watches.get(user);
      if (!w || !w.groups.delete(group)) continue;
      removed++;
      st.count--;
      this.subscriptions--;
      if (w.groups.size === 0 && this.unwatch(conn, st, user)) gone.push(user);
    }
    return { removed, gone };
  }

  /** The connection closed: all its subscriptions end. Returns the users no connection here watches any more. */
  closed(conn: PresenceConnection): Uuid[] {
    const st = this.conns.get(conn);
    if (!st) return [];
    const gone: Uuid[] = [];
    for (const user of [...st.watches.keys()]) if (this.unwatch(conn, st, user)) gone.push(user);
    this.subscriptions -= st.count;
    this.drop(conn, st);
    this.observe();
    return gone;
  }

  /** Whether any connection here watches the user. */
  watched(tenant: Uuid, user: Uuid): boolean {
    return this.watchers.has(tenant + user);
  }

  /** Every user watched here, per tenant (a re-read of them all). */
  watchedUsers(): Map<Uuid, Uuid[]> {
    const out = new Map<Uuid, Uuid[]>();
    for (const { tenant, user } of this.watchers.values()) {
      let list = out.get(tenant);
      if (!list) out.set(tenant, list = []);
      list.push(user);
    }
    return out;
  }

  /**
   * A user's state as just read: when it differs from the last one read, each connection watching
   * the user has it in its next PRESENCE_UPDATE (or, back at what it was told, not). Returns whether
   * it changed.
   */
  read(tenant: Uuid, user: Uuid, online: boolean): boolean {
    const key = tenant + user;
    const entry = this.watchers.get(key);
    if (!entry || this.known.get(key) === online) return false;
    this.known.set(key, online);
    for (const c of entry.conns) this.mark(c, this.conns.get(c)!, user);
    return true;
  }

  /** The state last read of a watched user (undefined: not watched here). */
  stateOf(tenant: Uuid, user: Uuid): boolean | undefined {
    return this.known.get(tenant + user);
  }

  /** (group, user) pairs held on this node; connections holding any. */
  get size(): { subscriptions: number; connections: number; users: number } {
    return { subscriptions: this.subscriptions, connections: this.conns.size, users: this.watchers.size };
  }

  private mark(conn: PresenceConnection, st: ConnectionState, user: Uuid): void {
    st.pending.add(user);
    if (st.timer || st.vetting) return;
    this.schedule(conn, st);
  }

  private schedule(conn: PresenceConnection, st: ConnectionState): void {
    const wait = st.lastSentAt + this.windowMs - Date.now();
    if (wait <= 0) {
      // the first change after a quiet window goes at the end of this turn (the turn's other changes with it)
      st.timer = setTimeout(() => this.flush(conn), 0);
    } else {
      metrics.held.inc();
      st.timer = setTimeout(() => this.flush(conn), wait);
    }
  }

  private flush(conn: PresenceConnection): void {
    const st = this.conns.get(conn);
    if (!st) return;
    st.timer = undefined;
    const users = [...st.pending].filter((user) => {
      const w = st.watches.get(user);
      const now = this.known.get(conn.tenant + user);
      if (!w || now === undefined) return false;
      // went and came back inside the window: the connection knows this already
      if (now === w.told) metrics.merged.inc();
      return now !== w.told;
    });
    st.pending.clear();
    if (users.length === 0) return;
    const vet = this.hooks.vet;
    if (!vet) {
      this.send(conn, st, users);
      return;
    }
    const byGroup = new Map<Uuid, Uuid[]>();
    for (const user of users) {
      for (const g of st.watches.get(user)!.groups) {
        const list = byGroup.get(g);
        if (list) list.push(user); else byGroup.set(g, [user]);
      }
    }
    st.vetting = true;
    vet(conn, byGroup).then((allowed) => {
      if (this.conns.get(conn) !== st) return;
      const gone: Uuid[] = [];
      for (const [g, list] of byGroup) {
        const ok = allowed.get(g);
        const out = list.filter((u) => !ok?.has(u));
        if (out.length === 0) continue;
        metrics.ended.inc(out.length);
        gone.push(...this.removePairs(conn, st, g, out).gone);
      }
      if (gone.length > 0) this.hooks.unwatched?.(conn.tenant, gone);
      this.observe();
      this.send(conn, st, users.filter((u) => st.watches.has(u)));
      if (st.watches.size === 0) this.drop(conn, st);
    }, () => {
      // not told what could not be checked: the same users again after a window
      metrics.checkFailures.inc();
      for (const u of users) st.pending.add(u);
      st.lastSentAt = Date.now();
    }).finally(() => {
      st.vetting = false;
      if (this.conns.get(conn) === st && st.pending.size > 0 && !st.timer) this.schedule(conn, st);
    });
  }

  /** One PRESENCE_UPDATE with these users' states now (one may have changed again while its pairs were checked). */
  private send(conn: PresenceConnection, st: ConnectionState, users: readonly Uuid[]): void {
    const states: PresenceState[] = [];
    for (const user of users) {
      const w = st.watches.get(user);
      const now = this.known.get(conn.tenant + user);
      if (w && now !== undefined && now !== w.told) states.push({ user, online: now });
    }
    if (states.length === 0) return;
    if (!conn.pushPresence(states)) {
      // not taken (past its push budget, a RESYNC): what it was told stays, so the same changes
      // are offered again a window later — a device back from a RESYNC learns them without subscribing again
      metrics.held.inc(states.length);
      for (const s of states) st.pending.add(s.user);
      st.lastSentAt = Date.now();
      if (!st.timer && !st.vetting) this.schedule(conn, st);
      return;
    }
    for (const s of states) st.watches.get(s.user)!.told = s.online;
    st.lastSentAt = Date.now();
    metrics.frames.inc();
    metrics.states.inc(states.length);
  }

  /** Drops `user` from `conn`'s watches; true when no connection here watches it any more. */
  private unwatch(conn: PresenceConnection, st: ConnectionState, user: Uuid): boolean {
    st.watches.delete(user);
    st.pending.delete(user);
    const key = conn.tenant + user;
    const entry = this.watchers.get(key);
    if (!entry) return false;
    entry.conns.delete(conn);
    if (entry.conns.size > 0) return false;
    this.watchers.delete(key);
    this.known.delete(key);
    return true;
  }

  private drop(conn: PresenceConnection, st: ConnectionState): void {
    clearTimeout(st.timer);
    this.conns.delete(conn);
  }

  private observe(): void {
    metrics.subscriptions.set(this.subscriptions);
    metrics.watchedUsers.set(this.watchers.size);
  }
}
