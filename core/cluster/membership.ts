import { COMMIT_BUCKET_COUNT, commitBucket, type KeySpace, type Uuid } from "../base/index.js";
import type { RedisStore } from "../store/index.js";
import { assignUnits, hrwScore } from "./assignment.js";
import { UNIT_KINDS, type Fence, type FencedWrite, type UnitGate, type UnitKind } from "./gate.js";
import { drainingKey, nodesKey, unitLeaseKey, unitsKey } from "./keys.js";
import { readLease } from "./lease.js";
import { metrics } from "./metrics.js";
import { acquireUnitScript, heartbeatScript, releaseUnitScript, type RegistryView } from "./scripts.js";

/** How long a node's heartbeat counts (by Redis's clock): after this it is dead and its units move. */
export const DEFAULT_LEASE_TTL_MS = 5000;
/** How often a node heartbeats and reconciles its units with the assignment. */
export const DEFAULT_HEARTBEAT_INTERVAL_MS = 1000;
/** User slots: a user's slot is its session bucket `{uNNN}` (commitBucket(tenant, user)). */
export const SLOT_COUNT = COMMIT_BUCKET_COUNT;
/** Relay buckets: the commit buckets `{bNNN}`. */
export const RELAY_BUCKET_COUNT = COMMIT_BUCKET_COUNT;
/** Room units `{rNNN}` (core/rooms): a room's writer is the owner of its unit. */
export const ROOM_UNIT_COUNT = 256;
/** Every this many reconciliations a node reads back the leases it keeps (a lost lease write shows there). */
export const KEPT_CHECK_EVERY = 5;
/** A node silent this many lease TTLs (at least a minute) is forgotten by the registry. */
export const FORGET_AFTER_TTLS = 12;

/** The slot (owner unit) of a user: its session bucket, where its session keys live. */
export function slotOfUser(tenant: Uuid, user: Uuid): number {
  return commitBucket(tenant, user);
}

export interface ClusterOptions {
  nodeId: string;
  /** The node RPC address host:port, or "" (none yet). */
  address: string;
  version: string;
  leaseTtlMs?: number;
  heartbeatIntervalMs?: number;
  /**
   * The kinds of units this node takes (default every kind): `["relay"]` makes an API node that
   * relays what it commits and leaves the dispatch partitions (session projection, conversation
   * list) and the user slots (registration, CMD state) to the nodes that take them. Every node
   * computes each kind's assignment over the live nodes that take that kind.
   */
  units?: readonly UnitKind[];
  log?: (line: string) => void;
}

export interface NodeRecord {
  nodeId: string;
  address: string;
  version: string;
  startedAt: number;
  /** By Redis's clock. */
  heartbeatAgeMs: number;
  alive: boolean;
  draining: boolean;
  /** The kinds of units it takes. */
  units: readonly UnitKind[];
  owned: OwnedCounts;
}

/** How many units of each kind a node's leases name. */
export interface OwnedCounts { relayBuckets: number; partitions: number; slots: number; rooms: number }

const OWNED_FIELD: Record<UnitKind, keyof OwnedCounts> = { relay: "relayBuckets", partition: "partitions", slot: "slots", room: "rooms" };
const noneOwned = (): OwnedCounts => ({ relayBuckets: 0, partitions: 0, slots: 0, rooms: 0 });
/** One empty value per unit kind. */
function perKind<T>(make: () => T): Record<UnitKind, T> {
  return Object.fromEntries(UNIT_KINDS.map((k) => [k, make()])) as Record<UnitKind, T>;
}

export interface UnitOwner {
  kind: UnitKind;
  unit: number;
  /** null: nobody (never taken, or released). */
  nodeId: string | null;
  address: string | null;
  token: number;
  /** Whether the owner's heartbeat is within the lease TTL. */
  alive: boolean;
}

export type KickForwarder = (owner: UnitOwner, buckets: number[]) => Promise<void>;

interface Lease {
  owner: string;
  token: number;
}

interface InFlight {
  n: number;
  idle: (() => void)[];
}

/**
 * This process as one node of the engine cluster (docs/cluster.md). Every heartbeat interval it
 * heartbeats (Redis TIME judges every age), computes the assignment from the live non-draining
 * nodes, releases the units it should no longer own once its work on them stopped, and takes the
 * desired units whose owner is none, released or dead by compare-and-set, bumping their fencing
 * token. Its local view (`owns`, `enter`) is what the relay, the projection consumer and the
 * registration task consult; every write they make on a unit carries its fence.
 */
export class ClusterMembership implements UnitGate {
  readonly fenced = true;
  readonly nodeId: string;
  readonly leaseTtlMs: number;
  readonly heartbeatIntervalMs: number;
  /** The kinds of units this node takes, in UNIT_KINDS order. */
  readonly units: readonly UnitKind[];
  private readonly startedAt = Date.now();
  /** The live nodes (id → address, incarnation) as the last accepted heartbeat saw them. */
  private live: ReadonlyMap<string, { address: string; startedAt: number }> = new Map();
  private readonly held: Record<UnitKind, Map<number, number>> = perKind(() => new Map<number, number>());
  private readonly inflight = new Map<string, InFlight>();
  private readonly listeners = new Set<(kind: UnitKind, unit: number, owned: boolean) => void>();
  private readonly unitCount: Record<UnitKind, number>;
  /** performance.now() when the last heartbeat that Redis accepted was sent. */
  private lastBeat: number | null = null;
  private firstBeat = true;
  private stopped = true;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> = Promise.resolve();
  private forwarder: KickForwarder | null = null;
  private readonly assignmentCache = new Map<UnitKind, { nodes: string; owners: (string | null)[] }>();

  constructor(
    private readonly store: RedisStore,
    private readonly keys: KeySpace,
    partitionCount: number,
    private readonly opts: ClusterOptions,
  ) {
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(opts.nodeId)) throw new Error(`node id ${JSON.stringify(opts.nodeId)}: 1 to 64 of A-Z a-z 0-9 . _ -`);
    this.nodeId = opts.nodeId;
    this.leaseTtlMs = opts.leaseTtlMs ?? DEFAULT_LEASE_TTL_MS;
    this.heartbeatIntervalMs = opts.heartbeatIntervalMs ?? DEFAULT_HEARTBEAT_INTERVAL_MS;
    if (this.heartbeatIntervalMs * 2 > this.leaseTtlMs) throw new Error(`cluster: the heartbeat interval (${this.heartbeatIntervalMs} ms) must be at most half the lease TTL (${this.leaseTtlMs} ms)`);
    this.unitCount = { relay: RELAY_BUCKET_COUNT, partition: partitionCount, slot: SLOT_COUNT, room: ROOM_UNIT_COUNT };
    const units = opts.units ?? UNIT_KINDS;
    const unknown = units.filter((k) => !UNIT_KINDS.includes(k));
    if (unknown.length > 0 || units.length === 0) throw new Error(`cluster: units ${JSON.stringify(units)}: one or more of ${UNIT_KINDS.join(", ")}`);
    this.units = UNIT_KINDS.filter((k) => units.includes(k));
  }

  private say(line: string): void {
    this.opts.log?.(`cluster: ${line}`);
  }

  /**
   * How long after its last accepted heartbeat this node stops trusting its leases: one interval
   * short of the TTL, so that it stops before any other node may judge it dead (by Redis's clock,
   * which started counting no earlier than this node sent the heartbeat).
   */
  private get trustMs(): number {
    return this.leaseTtlMs - this.heartbeatIntervalMs;
  }

  private fresh(): boolean {
    return this.lastBeat !== null && performance.now() - this.lastBeat <= this.trustMs;
  }

  /** This process's incarnation: the start time it registers with (a restarted node is another incarnation). */
  get incarnation(): number {
    return this.startedAt;
  }

  /** The live nodes as the last accepted heartbeat saw them (id → address, incarnation); no I/O. */
  liveNodes(): ReadonlyMap<string, { address: string; startedAt: number }> {
    return this.live;
  }

  owns(kind: UnitKind, unit: number): boolean {
    return this.held[kind].has(unit) && this.fresh();
  }

  tokenOf(kind: UnitKind, unit: number): number | null {
    return this.held[kind].get(unit) ?? null;
  }

  ownedUnits(kind: UnitKind): number[] {
    return [...this.held[kind].keys()].sort((a, b) => a - b);
  }

  enter(kind: UnitKind, unit: number): Fence | null {
    const token = this.held[kind].get(unit);
    if (token === undefined || !this.fresh()) return null;
    const k = `${kind}:${unit}`;
    const f = this.inflight.get(k);
    if (f) f.n++; else this.inflight.set(k, { n: 1, idle: [] });
    return { owner: this.nodeId, token };
  }

  leave(kind: UnitKind, unit: number): void {
    const k = `${kind}:${unit}`;
    const f = this.inflight.get(k);
    if (!f) return;
    if (--f.n === 0) {
      this.inflight.delete(k);
      for (const w of f.idle) w();
    }
  }

  /** Resolves once no work entered on the unit is in flight. */
  private quiesce(kind: UnitKind, unit: number): Promise<void> {
    const f = this.inflight.get(`${kind}:${unit}`);
    return f ? new Promise((resolve) => f.idle.push(resolve)) : Promise.resolve();
  }

  refused(kind: UnitKind, unit: number, write: FencedWrite, fence: Fence): void {
    metrics.fencedRefusals.inc({ kind, write });
    if (this.held[kind].get(unit) === fence.token) {
      this.say(`a ${write} on ${kind} ${unit} with token ${fence.token} was refused: the unit is no longer ours`);
      this.drop(kind, unit, "lost");
    }
  }

  /** Called when this node's draining flag turns on or off (qimctl cluster drain|undrain), as its heartbeat reads it. */
  onDraining(listener: (draining: boolean) => void): void {
    this.drainingListeners.add(listener);
  }

  /** Whether this node was draining at its last reconciliation. */
  get draining(): boolean {
    return this.selfDraining;
  }

  private readonly drainingListeners = new Set<(draining: boolean) => void>();
  private selfDraining = false;

  onChange(listener: (kind: UnitKind, unit: number, owned: boolean) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  setKickForwarder(f: KickForwarder): void {
    this.forwarder = f;
  }

  private readonly forwardPending = new Set<number>();
  private forwardScheduled = false;
  private readonly ownerCache = new Map<number, { owner: UnitOwner; at: number }>();

  /**
   * A commit of this process landed in a bucket another node owns: tell its owner (through the
   * forwarder the node RPC installs) rather than wait for its sweep. Coalesced per turn of the
   * event loop; owners are looked up at most once per heartbeat interval. Without a forwarder the
   * owner's sweep picks the commit up.
   */
  forwardKick(bucket: number): void {
    if (!this.forwarder || this.stopped) return;
    this.forwardPending.add(bucket);
    if (this.forwardScheduled) return;
    this.forwardScheduled = true;
    setImmediate(() => {
      this.forwardScheduled = false;
      const buckets = [...this.forwardPending];
      this.forwardPending.clear();
      void this.forward(buckets).catch((err: unknown) => this.say(`kick forwarding failed: ${(err as Error).message}`));
    });
  }

  private async forward(buckets: number[]): Promise<void> {
    const now = performance.now();
    const owners = await Promise.all(buckets.map(async (b) => {
      const c = this.ownerCache.get(b);
      if (c && now - c.at < this.heartbeatIntervalMs) return c.owner;
      const owner = await this.ownerOf("relay", b);
      this.ownerCache.set(b, { owner, at: now });
      return owner;
    }));
    const byNode = new Map<string, { owner: UnitOwner; buckets: number[] }>();
    owners.forEach((o, i) => {
      if (!o.nodeId || !o.alive || o.nodeId === this.nodeId) return;
      const g = byNode.get(o.nodeId);
      if (g) g.buckets.push(buckets[i]!); else byNode.set(o.nodeId, { owner: o, buckets: [buckets[i]!] });
    });
    await Promise.all([...byNode.values()].map((g) => this.forwarder!(g.owner, g.buckets)));
  }

  private emit(kind: UnitKind, unit: number, owned: boolean): void {
    for (const l of this.listeners) {
      try {
        l(kind, unit, owned);
      } catch (err) {
        this.say(`a listener failed: ${(err as Error).message}`);
      }
    }
  }

  private drop(kind: UnitKind, unit: number, why: "released" | "lost"): void {
    if (!this.held[kind].delete(unit)) return;
    if (why === "lost") metrics.reassignments.inc({ kind, direction: "lost" });
    metrics.ownedUnits.set({ kind }, this.held[kind].size);
    this.emit(kind, unit, false);
  }

  private dropAll(why: string): void {
    const n = UNIT_KINDS.reduce((a, k) => a + this.held[k].size, 0);
    if (n === 0) return;
    this.say(`dropping all ${n} unit(s): ${why}`);
    for (const kind of UNIT_KINDS) for (const unit of [...this.held[kind].keys()]) this.drop(kind, unit, "lost");
  }

  /** The live nodes, and per kind the live non-draining nodes that take it (the assignment's input). */
  private registry(view: RegistryView): { live: Set<string>; eligible: Record<UnitKind, string[]>; selfDraining: boolean } {
    const live = new Set<string>();
    const eligible: Record<UnitKind, string[]> = perKind((): string[] => []);
    let selfDraining = false;
    for (const n of view.nodes) {
      if (view.now - n.beatAt > this.leaseTtlMs) continue;
      live.add(n.nodeId);
      if (n.drainedAt === null) for (const k of n.units) eligible[k].push(n.nodeId);
      else if (n.nodeId === this.nodeId) selfDraining = true;
    }
    return { live, eligible, selfDraining };
  }

  /** Kinds no live node takes, as last reported (said once when it starts and once when it ends). */
  private readonly orphanKinds = new Set<UnitKind>();

  private reportOrphans(eligible: Record<UnitKind, string[]>): void {
    for (const kind of UNIT_KINDS) {
      metrics.kindNodes.set({ kind }, eligible[kind].length);
      const orphan = eligible[kind].length === 0;
      if (orphan === this.orphanKinds.has(kind)) continue;
      if (orphan) {
        this.orphanKinds.add(kind);
        this.say(`WARNING: no live node takes ${kind} units: their work waits until one does (cluster.units; qimctl cluster nodes)`);
      } else {
        this.orphanKinds.delete(kind);
        this.say(`${kind} units are taken again (by ${eligible[kind].length} live node(s))`);
      }
    }
  }

  private assignment(kind: UnitKind, eligible: string[]): (string | null)[] {
    const key = [...eligible].sort().join(",");
    const c = this.assignmentCache.get(kind);
    if (c && c.nodes === key) return c.owners;
    const owners = assignUnits(this.unitCount[kind], eligible, hrwScore(kind));
    this.assignmentCache.set(kind, { nodes: key, owners });
    return owners;
  }

  private readLeases(kind: UnitKind, units: number[]): Promise<Lease[]> {
    return Promise.all(units.map((u) => readLease(this.store, this.keys, kind, u)));
  }

  private heartbeat(): Promise<RegistryView> {
    return heartbeatScript.run(this.store.clientForKey(nodesKey(this.keys)), { nodes: nodesKey(this.keys), draining: drainingKey(this.keys), units: unitsKey(this.keys) }, {
      nodeId: this.nodeId, address: this.opts.address, version: this.opts.version, startedAt: this.startedAt,
      fresh: this.firstBeat, forgetAfterMs: Math.max(60_000, FORGET_AFTER_TTLS * this.leaseTtlMs), units: this.units,
    });
  }

  /** Gives a unit up once the work in flight on it stopped; nothing new starts on it meanwhile. */
  private async release(kind: UnitKind, unit: number): Promise<void> {
    const token = this.held[kind].get(unit);
    if (token === undefined) return;
    this.drop(kind, unit, "released");
    await this.quiesce(kind, unit);
    const key = unitLeaseKey(this.keys, kind, unit);
    const r = await releaseUnitScript.run(this.store.clientForKey(key), { lease: key }, { owner: this.nodeId, token });
    if (r.ok) metrics.releases.inc({ kind });
  }

  private async acquire(kind: UnitKind, unit: number, seen: Lease, dead: boolean): Promise<void> {
    const key = unitLeaseKey(this.keys, kind, unit);
    const r = await acquireUnitScript.run(this.store.clientForKey(key), { lease: key }, { expectedOwner: seen.owner, expectedToken: seen.token, owner: this.nodeId });
    if (!r.ok || this.stopped || !this.fresh()) return;
    this.held[kind].set(unit, r.token);
    metrics.acquisitions.inc({ kind });
    if (dead) metrics.reassignments.inc({ kind, direction: "taken" });
    metrics.ownedUnits.set({ kind }, this.held[kind].size);
    this.emit(kind, unit, true);
  }

  /**
   * One heartbeat. A node that could not heartbeat for longer than it may trust its leases (it was
   * paused, or Redis was away) first drops every unit locally: others may own them by now.
   */
  private async beat(): Promise<RegistryView> {
    const sent = performance.now();
    if (this.lastBeat !== null && sent - this.lastBeat > this.trustMs) this.dropAll(`no heartbeat accepted for ${Math.round(sent - this.lastBeat)} ms`);
    const view = await this.heartbeat();
    const live = new Map<string, { address: string; startedAt: number }>();
    for (const n of view.nodes) if (view.now - n.beatAt <= this.leaseTtlMs) live.set(n.nodeId, { address: n.address, startedAt: n.startedAt });
    this.live = live;
    this.lastBeat = sent;
    this.firstBeat = false;
    metrics.heartbeatAge.set((performance.now() - sent) / 1000);
    return view;
  }

  private reconciles = 0;
  private reconcileBusy = false;
  private chain: Promise<void> = Promise.resolve();

  /** Reconciliations run one at a time, in order. */
  private runReconcile(view: RegistryView): Promise<void> {
    this.reconcileBusy = true;
    const p = this.chain.then(() => this.reconcile(view)).finally(() => { this.reconcileBusy = false; });
    this.chain = p.catch(() => {});
    return p;
  }

  /**
   * Gives up the units the assignment moved away (once their work stopped) and takes the desired
   * ones that are free, released or a dead node's. Leases kept are checked against Redis every
   * KEPT_CHECK_EVERY reconciliations (a refused write drops a lost unit at once anyway).
   */
  private async reconcile(view: RegistryView): Promise<void> {
    const { live, eligible, selfDraining } = this.registry(view);
    if (selfDraining !== this.selfDraining) {
      this.selfDraining = selfDraining;
      for (const l of this.drainingListeners) l(selfDraining);
    }
    metrics.liveNodes.set(live.size);
    if (!this.stopped) this.reportOrphans(eligible);
    const checkKept = this.reconciles++ % KEPT_CHECK_EVERY === 0;
    await Promise.all(UNIT_KINDS.map(async (kind) => {
      const me = !this.stopped && !selfDraining && eligible[kind].includes(this.nodeId);
      const owners = me ? this.assignment(kind, eligible[kind]) : [];
      const desired = new Set<number>();
      owners.forEach((o, u) => { if (o === this.nodeId) desired.add(u); });
      const held = [...this.held[kind].keys()];
      const toRelease = held.filter((u) => !desired.has(u));
      const keep = checkKept ? held.filter((u) => desired.has(u)) : [];
      const want = [...desired].filter((u) => !this.held[kind].has(u));
      const [kept, wanted] = await Promise.all([this.readLeases(kind, keep), this.readLeases(kind, want)]);
      // a unit we hold whose lease moved (Redis lost our write, or we were judged dead): not ours
      keep.forEach((u, i) => { if (kept[i]!.owner !== this.nodeId || kept[i]!.token !== this.held[kind].get(u)) this.drop(kind, u, "lost"); });
      await Promise.all([
        ...toRelease.map((u) => this.release(kind, u)),
        ...want.map((u, i) => {
          const seen = wanted[i]!;
          const dead = seen.owner !== "" && !live.has(seen.owner);
          if (seen.owner === "" || dead || seen.owner === this.nodeId) return this.acquire(kind, u, seen, dead && seen.owner !== this.nodeId);
          return Promise.resolve(); // alive owner: it releases on its own reconciliation once its work stopped
        }),
      ]);
    }));
  }

  /** One heartbeat and a reconciliation, awaited (start-up, drain, tests). */
  async tick(): Promise<void> {
    await this.runReconcile(await this.beat());
  }

  /** The first tick (so that start-up work sees the units this node takes at once), then a heartbeat every interval. */
  async start(): Promise<void> {
    if (!this.stopped) return;
    this.stopped = false;
    await this.tick();
    this.say(`node ${this.nodeId} joined${this.units.length < UNIT_KINDS.length ? ` taking ${this.units.join(", ")} units only` : ""}: ${UNIT_KINDS.map((k) => `${this.held[k].size} ${k}`).join(", ")} (lease TTL ${this.leaseTtlMs} ms, heartbeat ${this.heartbeatIntervalMs} ms)`);
    this.schedule();
  }

  /**
   * Heartbeats keep their interval whatever a reconciliation costs (reading and writing hundreds
   * of leases on a loaded Redis Cluster can take longer than an interval): a heartbeat that waited
   * for it would make this node look dead to the others, and let its own trust lapse. A
   * reconciliation starts after a heartbeat when none is running.
   */
  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.beat()
        .then((view) => { if (!this.reconcileBusy && !this.stopped) this.runReconcile(view).catch((err: unknown) => this.say(`reconciliation failed: ${(err as Error).message}`)); })
        .catch((err: unknown) => this.say(`heartbeat failed: ${(err as Error).message}`))
        .finally(() => this.schedule());
    }, this.heartbeatIntervalMs);
  }

  /** Hands every unit over (after its work stopped) and leaves the registry: others take them on their next interval. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
    await this.chain;
    const n = UNIT_KINDS.reduce((a, k) => a + this.held[k].size, 0);
    await Promise.all(UNIT_KINDS.flatMap((kind) => [...this.held[kind].keys()].map((u) => this.release(kind, u))))
      .catch((err: unknown) => this.say(`release at stop failed: ${(err as Error).message}`));
    await Promise.all([nodesKey(this.keys), unitsKey(this.keys)].map((k) => this.store.clientForKey(k).hdel(k, this.nodeId)))
      .catch((err: unknown) => this.say(`leaving the registry failed: ${(err as Error).message}`));
    this.say(`node ${this.nodeId} left: released ${n} unit(s)`);
  }

  /** Marks a node draining: it releases all its units on its next interval (at once when it is this one) and takes none until it restarts. */
  async drain(nodeId: string): Promise<void> {
    await this.store.clientForKey(drainingKey(this.keys)).hset(drainingKey(this.keys), nodeId, Date.now());
    if (nodeId === this.nodeId && !this.stopped) await this.tick();
  }

  /**
   * Clears a node's draining flag: the others' next reconciliation counts it again and hands it
   * its share (at once when it is this one). Returns whether it was draining.
   */
  async undrain(nodeId: string): Promise<boolean> {
    const removed = await this.store.clientForKey(drainingKey(this.keys)).hdel(drainingKey(this.keys), nodeId);
    if (nodeId === this.nodeId && !this.stopped) await this.tick();
    return removed > 0;
  }

  private async readRegistry(): Promise<RegistryView> {
    return heartbeatScript.run(this.store.clientForKey(nodesKey(this.keys)), { nodes: nodesKey(this.keys), draining: drainingKey(this.keys), units: unitsKey(this.keys) }, {
      nodeId: "", address: "", version: "", startedAt: 0, fresh: false, forgetAfterMs: Math.max(60_000, FORGET_AFTER_TTLS * this.leaseTtlMs), units: UNIT_KINDS,
    });
  }

  /** Every registered node with its heartbeat age (Redis's clock) and the units its leases name. */
  async nodes(): Promise<NodeRecord[]> {
    const view = await this.readRegistry();
    const owned = new Map<string, NodeRecord["owned"]>();
    await Promise.all(UNIT_KINDS.map(async (kind) => {
      const units = Array.from({ length: this.unitCount[kind] }, (_, u) => u);
      for (const l of await this.readLeases(kind, units)) {
        if (l.owner === "") continue;
        const o = owned.get(l.owner) ?? noneOwned();
        o[OWNED_FIELD[kind]]++;
        owned.set(l.owner, o);
      }
    }));
    return view.nodes.map((n) => ({
      nodeId: n.nodeId, address: n.address, version: n.version, startedAt: n.startedAt,
      heartbeatAgeMs: Math.max(0, view.now - n.beatAt), alive: view.now - n.beatAt <= this.leaseTtlMs, draining: n.drainedAt !== null, units: n.units,
      owned: owned.get(n.nodeId) ?? noneOwned(),
    })).sort((a, b) => (a.nodeId < b.nodeId ? -1 : 1));
  }

  /** A unit's owner as its lease records it, with the owner's address and liveness from the registry. */
  async ownerOf(kind: UnitKind, unit: number): Promise<UnitOwner> {
    if (!Number.isInteger(unit) || unit < 0 || unit >= this.unitCount[kind]) throw new RangeError(`${kind} ${unit}: expected 0 to ${this.unitCount[kind] - 1}`);
    const [[lease], view] = await Promise.all([this.readLeases(kind, [unit]), this.readRegistry()]);
    const node = lease!.owner === "" ? undefined : view.nodes.find((n) => n.nodeId === lease!.owner);
    return {
      kind, unit, nodeId: lease!.owner === "" ? null : lease!.owner, address: node?.address ?? null, token: lease!.token,
      alive: node !== undefined && view.now - node.beatAt <= this.leaseTtlMs,
    };
  }
}
