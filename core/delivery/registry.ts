import { GLOBAL_TAG, type KeySpace, type Uuid } from "../base/index.js";
import { RedisStore } from "../store/index.js";
import { onlineKey } from "./keys.js";

/** How long a user's online entry lives after its node last wrote it (nodes rewrite theirs every ONLINE_REFRESH_MS). */
export const ONLINE_ENTRY_TTL_MS = 6 * 3600_000;
/** How often a node rewrites the online entries of the users connected to it (bounded pages). */
export const ONLINE_REFRESH_MS = 3600_000;
/** Users looked up per pipeline when the delivery consumer locates a record's recipients. */
export const LOCATE_CHUNK = 500;
/** How long the consumer trusts its read of which nodes hold any connection. */
export const ONLINE_NODES_CACHE_MS = 250;
/** How often a node with a gateway publishes its connection count (`{g000}:online:counts`, for `cluster nodes` and the dashboard). */
export const ONLINE_COUNT_PUBLISH_MS = 5_000;
/** An unchanged count is written again this often (a failover may have lost it). */
export const ONLINE_COUNT_REWRITE_MS = 60_000;

/** A live node of the cluster as the registry needs it. */
export interface LiveNode {
  address: string;
  /** Its incarnation: the start time it registered with (a restart is another incarnation). */
  startedAt: number;
}

/** This node in the cluster, and the cluster's live nodes as its last heartbeat saw them. */
export interface RegistryCluster {
  nodeId: string;
  incarnation: number;
  liveNodes(): ReadonlyMap<string, LiveNode>;
}

/** A remote node that holds connections of some recipients. */
export interface Located {
  nodeId: string;
  address: string;
  users: Uuid[];
}

/** The engine-wide set of nodes that hold any device connection (node id → incarnation), on `{g000}`. */
function onlineNodesKey(space: KeySpace): string {
  return space.key(GLOBAL_TAG, "online:nodes");
}

/** Each node's published connection count, `{g000}:online:counts` (node id → JSON {incarnation, connections}). */
function onlineCountsKey(space: KeySpace): string {
  return space.key(GLOBAL_TAG, "online:counts");
}

/**
 * Where users are online across the cluster (issue 27): per user a hash of node → incarnation on
 * the user's slot tag (keys.ts), and the set of nodes that hold any connection at all, so that a
 * cluster with no device online (most of them, before the gateway) costs the consumer one cached
 * read instead of a lookup per recipient. Written by the node that holds the connection, read by
 * the partitions' delivery consumers; without a cluster every connection is local and nothing is
 * written.
 */
export class OnlineRegistry {
  private nodesCache: { at: number; nodes: Map<string, number> } | null = null;
  private announced = false;
  private published = false;
  /** Writes in the order they were made (an online right after an offline of the same user must land last). */
  private chain: Promise<unknown> = Promise.resolve();

  constructor(private readonly store: RedisStore, private readonly keys: KeySpace, private readonly cluster: RegistryCluster | null) {}

  get clustered(): boolean {
    return this.cluster !== null;
  }

  /** The user's first connection on this node. */
  online(tenant: Uuid, user: Uuid): Promise<void> {
    const c = this.cluster;
    if (!c) return Promise.resolve();
    const key = onlineKey(this.keys, tenant, user);
    return this.enqueue(async () => {
      if (!this.announced) {
        await this.store.clientForKey(onlineNodesKey(this.keys)).hset(onlineNodesKey(this.keys), c.nodeId, String(c.incarnation));
        this.announced = true;
      }
      await this.store.clientForKey(key).multi().hset(key, c.nodeId, String(c.incarnation)).pexpire(key, ONLINE_ENTRY_TTL_MS).exec();
    });
  }

  /** The user's last connection on this node closed. */
  offline(tenant: Uuid, user: Uuid): Promise<void> {
    const c = this.cluster;
    if (!c) return Promise.resolve();
    const key = onlineKey(this.keys, tenant, user);
    return this.enqueue(async () => { await this.store.clientForKey(key).hdel(key, c.nodeId); });
  }

  /** Rewrites the entries of users connected here (their TTL), in pipelines of LOCATE_CHUNK. */
  async refresh(users: readonly { tenant: Uuid; user: Uuid }[]): Promise<void> {
    const c = this.cluster;
    if (!c || users.length === 0) return;
    for (let i = 0; i < users.length; i += LOCATE_CHUNK) {
      const keys = users.slice(i, i + LOCATE_CHUNK).map((u) => onlineKey(this.keys, u.tenant, u.user));
      await Promise.all(this.store.byTarget(keys.map(RedisStore.tagOf)).map(async ({ client, idx }) => {
        const p = client.pipeline();
        for (const j of idx) p.hset(keys[j]!, c.nodeId, String(c.incarnation)).pexpire(keys[j]!, ONLINE_ENTRY_TTL_MS);
        await p.exec();
      }));
    }
    await this.store.clientForKey(onlineNodesKey(this.keys)).hset(onlineNodesKey(this.keys), c.nodeId, String(c.incarnation));
  }

  /** Publishes this node's connection count (one HSET; kept while the node lives, dropped by withdraw). */
  async publishCount(connections: number): Promise<void> {
    const c = this.cluster;
    if (!c) return;
    const key = onlineCountsKey(this.keys);
    this.published = true;
    await this.store.clientForKey(key).hset(key, c.nodeId, JSON.stringify({ incarnation: c.incarnation, connections }));
  }

  /**
   * Each node's published connection count, by node id; a node whose entry is of another
   * incarnation than the one alive now (a restart that has not published yet) is left out. One
   * HGETALL of one field per node.
   */
  async counts(): Promise<Map<string, number>> {
    const c = this.cluster;
    if (!c) return new Map();
    const key = onlineCountsKey(this.keys);
    const raw = await this.store.clientForKey(key).hgetall(key);
    const live = c.liveNodes();
    const out = new Map<string, number>();
    for (const [id, v] of Object.entries(raw)) {
      try {
        const x = JSON.parse(v) as { incarnation?: unknown; connections?: unknown };
        const n = live.get(id);
        if (n && n.startedAt === x.incarnation && typeof x.connections === "number") out.set(id, x.connections);
      } catch {
        // not ours: skipped
      }
    }
    return out;
  }

  /** This node leaves the set of nodes with connections (its users' entries stop counting with it). */
  async withdraw(): Promise<void> {
    const c = this.cluster;
    if (c && this.published) {
      this.published = false;
      await this.store.clientForKey(onlineCountsKey(this.keys)).hdel(onlineCountsKey(this.keys), c.nodeId);
    }
    if (!c || !this.announced) return;
    this.announced = false;
    await this.enqueue(() => this.store.clientForKey(onlineNodesKey(this.keys)).hdel(onlineNodesKey(this.keys), c.nodeId));
  }

  /**
   * The other live nodes that hold any connection now (incarnation checked), cached for
   * ONLINE_NODES_CACHE_MS: empty means no recipient can be elsewhere and nothing is looked up.
   */
  async remoteNodes(): Promise<Map<string, number>> {
    const c = this.cluster;
    if (!c) return new Map();
    const now = Date.now();
    if (this.nodesCache && now - this.nodesCache.at < ONLINE_NODES_CACHE_MS) return this.nodesCache.nodes;
    const raw = await this.store.clientForKey(onlineNodesKey(this.keys)).hgetall(onlineNodesKey(this.keys));
    const live = c.liveNodes();
    const nodes = new Map<string, number>();
    for (const [id, inc] of Object.entries(raw)) {
      if (id === c.nodeId) continue;
      const n = live.get(id);
      if (n && n.startedAt === Number(inc)) nodes.set(id, n.startedAt);
    }
    this.nodesCache = { at: now, nodes };
    return nodes;
  }

  /** The other live nodes that hold any connection now, with their addresses (no users named). */
  async remoteTargets(): Promise<Located[]> {
    const c = this.cluster;
    if (!c) return [];
    const live = c.liveNodes();
    return [...(await this.remoteNodes()).keys()].map((nodeId) => ({ nodeId, address: live.get(nodeId)?.address ?? "", users: [] }));
  }

  /**
   * The other nodes holding connections of these users, each with its users (a user on several
   * nodes is in each). Entries of dead nodes or of an older incarnation do not count. Looked up
   * in pipelines of LOCATE_CHUNK users.
   */
  locate(tenant: Uuid, users: readonly Uuid[]): Promise<Located[]> {
    return this.locateBy(tenant, users, (t, u) => onlineKey(this.keys, t, u));
  }

  /**
   * The same over another per-user hash of node id → incarnation (`keyOf`, on the user's slot tag:
   * presence's watch entries): the other live nodes it names with that incarnation, each with its users.
   */
  async locateBy(tenant: Uuid, users: readonly Uuid[], keyOf: (tenant: Uuid, user: Uuid) => string): Promise<Located[]> {
    const c = this.cluster;
    if (!c || users.length === 0) return [];
    const remote = await this.remoteNodes();
    if (remote.size === 0) return [];
    const live = c.liveNodes();
    const out = new Map<string, Located>();
    for (let i = 0; i < users.length; i += LOCATE_CHUNK) {
      const chunk = users.slice(i, i + LOCATE_CHUNK);
      const keys = chunk.map((u) => keyOf(tenant, u));
      await Promise.all(this.store.byTarget(keys.map(RedisStore.tagOf)).map(async ({ client, idx }) => {
        const p = client.pipeline();
        for (const j of idx) p.hgetall(keys[j]!);
        const res = (await p.exec()) ?? [];
        res.forEach(([err, fields], k) => {
          if (err) throw err;
          for (const [nodeId, inc] of Object.entries(fields as Record<string, string>)) {
            if (remote.get(nodeId) !== Number(inc)) continue;
            let l = out.get(nodeId);
            if (!l) {
              l = { nodeId, address: live.get(nodeId)?.address ?? "", users: [] };
              out.set(nodeId, l);
            }
            l.users.push(chunk[idx[k]!]!);
          }
        });
      }));
    }
    return [...out.values()];
  }

  private enqueue<T>(f: () => Promise<T>): Promise<T> {
    const p = this.chain.then(f);
    this.chain = p.catch(() => undefined);
    return p;
  }
}
