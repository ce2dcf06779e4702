import {
  InvalidArgumentError, PermissionDeniedError, PRESENCE_PUSH_MERGE_WINDOW_MS, PRESENCE_SUB_BURST, PRESENCE_SUB_MAX_USERS, PRESENCE_SUB_RATE, QimError, type KeySpace, type Uuid,
} from "../base/index.js";
import { LOCATE_CHUNK, ONLINE_ENTRY_TTL_MS, ONLINE_REFRESH_MS, type Delivery, type Located, type RegistryCluster } from "../delivery/index.js";
import { RedisStore } from "../store/index.js";
import { KeyedRateLimiter } from "../support/index.js";
import { presenceWatchKey } from "./keys.js";
import { LocalPresence, type PresenceConnection, type PresenceState } from "./local.js";
import { presenceMetrics as metrics } from "./metrics.js";

/** How long a node's watch entry lives after its last write (nodes rewrite theirs every ONLINE_REFRESH_MS, like online entries). */
export const PRESENCE_WATCH_TTL_MS = ONLINE_ENTRY_TTL_MS;
/** How often a node compares the cluster's live nodes with the last look: a node gone (or restarted) makes every watched user be read again. */
export const PRESENCE_NODES_CHECK_MS = 1000;
/** Every watched user is read again this often: the safety net for a poke that was lost (a failed node call). */
export const PRESENCE_RECHECK_MS = 60_000;

/** PRESENCE_SUB_RATE refused a subscription: nothing changed; retry after `retryAfterMs`. */
export class PresenceRateLimitedError extends QimError {
  constructor(readonly retryAfterMs: number) {
    super("RATE_LIMITED", `at most ${PRESENCE_SUB_RATE} PRESENCE_SUB per second per user and group (PRESENCE_SUB_RATE, burst ${PRESENCE_SUB_BURST}): nothing changed; retry after ${retryAfterMs} ms`, { retryAfterMs });
    this.name = "PresenceRateLimitedError";
  }
}

export interface PresenceOptions {
  /** The per-connection merge window (PRESENCE_PUSH_MERGE_WINDOW_MS). */
  mergeWindowMs?: number;
  /** The periodic re-read of every watched user (PRESENCE_RECHECK_MS). */
  recheckMs?: number;
  log?: (line: string) => void;
}

/** What presence needs from the rest of the engine. */
export interface PresenceDeps {
  /** Whether each user is an ACTIVE member of the group (one bounded read; false for all in a dissolved group). */
  activeMembers(tenant: Uuid, group: Uuid, users: readonly Uuid[]): Promise<boolean[]>;
}

/** A subscription's answer: the states now, the users left out (not ACTIVE members), and how many the connection holds. */
export interface SubscribeResult {
  states: PresenceState[];
  notMembers: Uuid[];
  subscriptions: number;
}

type UsersByTenant = Map<Uuid, Set<Uuid>>;

function addTo(m: UsersByTenant, tenant: Uuid, users: Iterable<Uuid>): void {
  let set = m.get(tenant);
  if (!set) m.set(tenant, set = new Set());
  for (const u of users) set.add(u);
}

/**
 * Presence subscriptions (spec 003 §2.1, issue 28): a device watches whether members of a group it
 * is in are online (connected anywhere in the cluster). Online only, never stored: the watches are
 * this node's memory, and in Redis only which nodes watch a user (`{uNNN}:presence:watch:*`), so
 * that the node where a user's first or last connection comes or goes tells just those nodes. A
 * told node reads the user's state again (the online registry: a late call cannot undo a newer
 * change) and pushes it through each connection's merge window. A dead node's users are read
 * again when the live nodes change; everything watched is read again every PRESENCE_RECHECK_MS.
 */
export class Presence {
  readonly local: LocalPresence;
  private readonly limiter = new KeyedRateLimiter({ rate: PRESENCE_SUB_RATE, burst: PRESENCE_SUB_BURST });
  /** Connections that closed (a subscription finishing after its connection went adds nothing). */
  private readonly gone = new WeakSet<PresenceConnection>();
  /** Users whose first or last connection here came or went, to tell their watchers. */
  private toTell: UsersByTenant = new Map();
  private telling: Promise<void> | null = null;
  /** Watched users to read again. */
  private dirty: UsersByTenant = new Map();
  private reading: Promise<void> | null = null;
  private readonly reasons = new Map<string, number>();
  /** Watch-entry writes in the order they were made (a watch right after an unwatch of the same user must land last). */
  private chain: Promise<unknown> = Promise.resolve();
  private timers: NodeJS.Timeout[] = [];
  /** This turn's membership reads, per tenant and group (activeOf). */
  private readonly checks = new Map<string, { wanted: Set<Uuid>; done: Promise<Map<Uuid, boolean>> }>();
  private nodesSeen = "";

  constructor(
    private readonly store: RedisStore, private readonly keys: KeySpace, private readonly delivery: Delivery,
    private readonly cluster: RegistryCluster | null, private readonly deps: PresenceDeps, private readonly opts: PresenceOptions = {},
  ) {
    this.local = new LocalPresence(opts.mergeWindowMs ?? PRESENCE_PUSH_MERGE_WINDOW_MS, undefined, {
      vet: (conn, byGroup) => this.vet(conn, byGroup),
      unwatched: (tenant, users) => this.unwatch(tenant, users).catch((err: unknown) => this.warn("removing watch entries", err)),
    });
    delivery.onPresence({
      changed: (tenant, user) => this.changedHere(tenant, user),
      poked: (tenant, users) => this.markDirty(tenant, users.filter((u) => this.local.watched(tenant, u)), "poke"),
    });
  }

  /**
   * `subscriber`'s connection watches `users` through `group`: the subscriber must be an ACTIVE
   * member (PERMISSION_DENIED otherwise, like TYPING); users who are not ACTIVE members are left out
   * and named. PRESENCE_SUB_RATE per user and group; MAX_PRESENCE_SUBSCRIPTIONS_PER_CONNECTION.
   * Every refusal changes nothing.
   */
  async subscribe(conn: PresenceConnection, subscriber: Uuid, group: Uuid, users: readonly Uuid[]): Promise<SubscribeResult> {
    const tenant = conn.tenant;
    if (users.length === 0 || users.length > PRESENCE_SUB_MAX_USERS) throw new InvalidArgumentError("users", `1 to ${PRESENCE_SUB_MAX_USERS} users a PRESENCE_SUB (PRESENCE_SUB_MAX_USERS)`);
    if (new Set(users).size !== users.length) throw new InvalidArgumentError("users", "a user is named twice");
    this.local.checkRoom(conn, group, users);
    const wait = this.limiter.take(`${tenant}|${subscriber}|${group}`);
    if (wait > 0) {
      metrics.refused.inc({ reason: "rate" });
      throw new PresenceRateLimitedError(wait);
    }
    const active = await this.deps.activeMembers(tenant, group, [subscriber, ...users]);
    // ADR-0021 §3: a user cannot tell a missing group (or a dissolved one) from one they are not in
    if (!active[0]) throw new PermissionDeniedError();
    const allowed = users.filter((_, i) => active[i + 1]);
    const notMembers = users.filter((_, i) => !active[i + 1]);
    if (notMembers.length > 0) metrics.refused.inc({ reason: "not_member" }, notMembers.length);
    // watched first, read after: a change after the read is told to this node; one before it is in the read
    const unwatchedHere = allowed.filter((u) => !this.local.watched(tenant, u));
    await this.watch(tenant, unwatchedHere);
    let states: PresenceState[];
    try {
      states = await this.readStates(tenant, allowed);
      if (this.gone.has(conn)) throw new InvalidArgumentError("connection", "the connection closed");
      // another subscription of the connection may have finished meanwhile
      this.local.checkRoom(conn, group, allowed);
    } catch (err) {
      await this.unwatch(tenant, unwatchedHere.filter((u) => !this.local.watched(tenant, u)));
      throw err;
    }
    const fresh = this.local.add(conn, group, states);
    // a user another connection here watched when this began, whose watch ended meanwhile (its entry
    // removed): written again, and read again once it is (a change in between was told to no one here)
    const lapsed = fresh.filter((u) => !unwatchedHere.includes(u));
    if (lapsed.length > 0) this.watch(tenant, lapsed).then(() => this.markDirty(tenant, lapsed, "poke"), (err: unknown) => this.warn("writing watch entries", err));
    return { states, notMembers, subscriptions: this.local.wouldHold(conn, group, []) };
  }

  /** Ends `conn`'s subscriptions through `group` to `users` (every one through the group when empty); returns how many ended. */
  async unsubscribe(conn: PresenceConnection, group: Uuid, users: readonly Uuid[]): Promise<{ removed: number; subscriptions: number }> {
    if (users.length > PRESENCE_SUB_MAX_USERS) throw new InvalidArgumentError("users", `at most ${PRESENCE_SUB_MAX_USERS} users a PRESENCE_SUB (PRESENCE_SUB_MAX_USERS)`);
    const { removed, gone } = this.local.remove(conn, group, users.length === 0 ? null : users);
    await this.unwatch(conn.tenant, gone);
    return { removed, subscriptions: this.local.wouldHold(conn, group, []) };
  }

  /**
   * Before a frame: which users each group may still tell the connection of — none when its
   * subscriber is no longer an ACTIVE member (left, removed, the group dissolved), and only the
   * watched users who still are. One bounded read per group in the frame (at most one frame per
   * connection per merge window).
   */
  private async vet(conn: PresenceConnection, byGroup: ReadonlyMap<Uuid, readonly Uuid[]>): Promise<Map<Uuid, Set<Uuid>>> {
    const allowed = new Map<Uuid, Set<Uuid>>();
    await Promise.all([...byGroup].map(async ([group, users]) => {
      const active = await this.activeOf(conn.tenant, group, [conn.user, ...users]);
      allowed.set(group, new Set(active.get(conn.user) ? users.filter((u) => active.get(u)) : []));
    }));
    return allowed;
  }

  /**
   * Whether each user is an ACTIVE member of the group, read once for every frame of this turn:
   * one change pushed to a thousand watching connections here is one read per group (in pipelines
   * of LOCATE_CHUNK users), not one per connection.
   */
  private activeOf(tenant: Uuid, group: Uuid, users: readonly Uuid[]): Promise<Map<Uuid, boolean>> {
    const key = `${tenant}|${group}`;
    let batch = this.checks.get(key);
    if (!batch) {
      const wanted = new Set<Uuid>();
      const done = new Promise<void>((resolve) => setImmediate(resolve)).then(async () => {
        // later asks start a batch of their own
        this.checks.delete(key);
        const list = [...wanted];
        const out = new Map<Uuid, boolean>();
        for (let i = 0; i < list.length; i += LOCATE_CHUNK) {
          const chunk = list.slice(i, i + LOCATE_CHUNK);
          (await this.deps.activeMembers(tenant, group, chunk)).forEach((a, j) => out.set(chunk[j]!, a));
        }
        return out;
      });
      this.checks.set(key, batch = { wanted, done });
    }
    for (const u of users) batch.wanted.add(u);
    return batch.done;
  }

  /** The connection closed: its subscriptions end (the watch entries of users nobody here watches any more are removed). */
  closed(conn: PresenceConnection): void {
    this.gone.add(conn);
    const gone = this.local.closed(conn);
    this.unwatch(conn.tenant, gone).catch((err: unknown) => this.warn("removing watch entries", err));
  }

  start(): void {
    if (this.cluster) {
      this.nodesSeen = this.nodesSignature();
      this.every(PRESENCE_NODES_CHECK_MS, () => {
        const now = this.nodesSignature();
        if (now === this.nodesSeen) return;
        this.nodesSeen = now;
        this.markAll("nodes");
      });
      this.every(ONLINE_REFRESH_MS, () => {
        for (const [tenant, users] of this.local.watchedUsers()) this.watch(tenant, users).catch((err: unknown) => this.warn("refreshing watch entries", err));
      });
    }
    this.every(this.opts.recheckMs ?? PRESENCE_RECHECK_MS, () => this.markAll("recheck"));
  }

  async stop(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    await Promise.all([this.telling, this.reading, this.chain]);
  }

  /** The users' states now: a connection here, or an entry of a live node elsewhere (the online registry). */
  private async readStates(tenant: Uuid, users: readonly Uuid[]): Promise<PresenceState[]> {
    const elsewhere = new Set<Uuid>();
    for (const l of await this.delivery.registry.locate(tenant, users)) for (const u of l.users) elsewhere.add(u);
    return users.map((user) => ({ user, online: this.delivery.local.has(tenant, user) || elsewhere.has(user) }));
  }

  /** A user's first or last connection here came or went (the registry holds it): its watchers are told at the end of this turn. */
  private changedHere(tenant: Uuid, user: Uuid): void {
    addTo(this.toTell, tenant, [user]);
    this.scheduleTell();
  }

  private scheduleTell(): void {
    this.telling ??= new Promise<void>((resolve) => setImmediate(resolve)).then(() => this.tell()).finally(() => {
      this.telling = null;
      // one that came between the last round and now
      if (this.toTell.size > 0) this.scheduleTell();
    });
  }

  /** Tells each node watching a changed user (this one through its own read), in calls of at most LOCATE_CHUNK users. */
  private async tell(): Promise<void> {
    while (this.toTell.size > 0) {
      const batch = this.toTell;
      this.toTell = new Map();
      for (const [tenant, set] of batch) {
        const users = [...set];
        this.markDirty(tenant, users.filter((u) => this.local.watched(tenant, u)), "poke");
        if (!this.cluster) continue;
        for (let i = 0; i < users.length; i += LOCATE_CHUNK) await this.tellChunk(tenant, users.slice(i, i + LOCATE_CHUNK));
      }
    }
  }

  private async tellChunk(tenant: Uuid, users: Uuid[]): Promise<void> {
    let to: Located[];
    try {
      // the watching nodes among the live ones that hold connections (a watcher is a connection), this one aside
      to = await this.delivery.registry.locateBy(tenant, users, (t, u) => presenceWatchKey(this.keys, t, u));
    } catch (err) {
      // the watchers read them again at their next recheck
      this.warn("reading watch entries", err);
      return;
    }
    await Promise.all(to.map(async (l) => {
      try {
        await this.delivery.pokePresence(l, tenant, l.users);
        metrics.pokes.inc({ outcome: "ok" });
      } catch (err) {
        metrics.pokes.inc({ outcome: "failed" });
        this.warn(`telling ${l.nodeId}`, err);
      }
    }));
  }

  private markAll(reason: string): void {
    for (const [tenant, users] of this.local.watchedUsers()) this.markDirty(tenant, users, reason);
  }

  private markDirty(tenant: Uuid, users: readonly Uuid[], reason: string): void {
    if (users.length === 0) return;
    addTo(this.dirty, tenant, users);
    this.reasons.set(reason, (this.reasons.get(reason) ?? 0) + users.length);
    this.scheduleRead();
  }

  private scheduleRead(): void {
    this.reading ??= this.readDirty().finally(() => {
      this.reading = null;
      if (this.dirty.size > 0) this.scheduleRead();
    });
  }

  /** Reads the dirty users again, LOCATE_CHUNK at a time, until none is left; one run at a time, so reads land in order. */
  private async readDirty(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (this.dirty.size > 0) {
      const batch = this.dirty;
      this.dirty = new Map();
      for (const [reason, n] of this.reasons) metrics.reads.inc({ reason }, n);
      this.reasons.clear();
      for (const [tenant, set] of batch) {
        const users = [...set];
        for (let i = 0; i < users.length; i += LOCATE_CHUNK) {
          const chunk = users.slice(i, i + LOCATE_CHUNK).filter((u) => this.local.watched(tenant, u));
          if (chunk.length === 0) continue;
          try {
            for (const s of await this.readStates(tenant, chunk)) this.local.read(tenant, s.user, s.online);
          } catch (err) {
            this.warn("reading online states", err);
          }
        }
      }
    }
  }

  /** Writes this node's watch entries of `users` (nothing outside a cluster), in pipelines of LOCATE_CHUNK. */
  private watch(tenant: Uuid, users: readonly Uuid[]): Promise<void> {
    return this.writeWatches(tenant, users, true);
  }

  /** Removes them. */
  private unwatch(tenant: Uuid, users: readonly Uuid[]): Promise<void> {
    return this.writeWatches(tenant, users, false);
  }

  private writeWatches(tenant: Uuid, users: readonly Uuid[], watching: boolean): Promise<void> {
    const c = this.cluster;
    if (!c || users.length === 0) return Promise.resolve();
    return this.enqueue(async () => {
      for (let i = 0; i < users.length; i += LOCATE_CHUNK) {
        const keys = users.slice(i, i + LOCATE_CHUNK).map((u) => presenceWatchKey(this.keys, tenant, u));
        await Promise.all(this.store.byTarget(keys.map(RedisStore.tagOf)).map(async ({ client, idx }) => {
          const p = client.pipeline();
          for (const j of idx) {
            if (watching) p.hset(keys[j]!, c.nodeId, String(c.incarnation)).pexpire(keys[j]!, PRESENCE_WATCH_TTL_MS);
            else p.hdel(keys[j]!, c.nodeId);
          }
          for (const [err] of (await p.exec()) ?? []) if (err) throw err;
        }));
      }
    });
  }

  private enqueue<T>(f: () => Promise<T>): Promise<T> {
    const p = this.chain.then(f);
    this.chain = p.catch(() => undefined);
    return p;
  }

  private nodesSignature(): string {
    return [...this.cluster!.liveNodes()].map(([id, n]) => `${id}@${n.startedAt}`).sort().join(",");
  }

  private every(ms: number, f: () => void): void {
    const t = setInterval(f, ms);
    t.unref();
    this.timers.push(t);
  }

  private warn(what: string, err: unknown): void {
    this.opts.log?.(`presence: ${what}: ${err instanceof Error ? err.message : String(err)}`);
  }
}
