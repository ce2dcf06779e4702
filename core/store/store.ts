import { Cluster, Redis } from "ioredis";
import { parseAddr, tagShard, type TopologyConfig } from "../base/index.js";
import { defineScripts } from "../lua/index.js";

/** One connection to the store: a standalone instance or the whole Cluster. */
export type RedisClient = Redis | Cluster;

export interface StoreOptions {
  /** ioredis connect timeout and per-command bound, so an unreachable store fails fast. */
  connectTimeoutMs?: number;
  commandTimeoutMs?: number;
  /** Connection errors (ioredis reconnects by itself); without a handler ioredis prints each one. */
  onError?: (err: Error) => void;
  /** One socket write per connection per turn of the event loop (coalesceWrites; default true). */
  coalesceWrites?: boolean;
}

/**
 * Makes a connection send the commands written to it during one turn of the event loop (the
 * current task and the microtasks it queues) in one socket write: the socket is corked at the
 * first write and uncorked after those microtasks, so the commands leave, in order, in one
 * writev before the event loop moves on — no later, and with no timer. ioredis writes every
 * command on its own, and a write to a loopback socket is a system call that also wakes
 * redis-server: on these machines that was the largest single cost of a membership change
 * (bench/admin: about 14 writes per add+remove pair in the admin server, each a syscall). The
 * hook is put on each new socket (ioredis makes one per connection, and another on reconnect).
 */
function coalesceWrites(client: Redis): void {
  const hooked = new WeakSet<object>();
  const hook = () => {
    const stream = (client as unknown as { stream?: import("node:net").Socket }).stream;
    if (!stream || hooked.has(stream)) return;
    hooked.add(stream);
    const write = stream.write;
    let corked = false;
    const uncork = () => {
      corked = false;
      stream.uncork();
    };
    stream.write = function (this: import("node:net").Socket, ...args: unknown[]) {
      if (!corked) {
        corked = true;
        stream.cork();
        queueMicrotask(uncork);
      }
      return (write as (...a: unknown[]) => boolean).apply(this, args);
    } as typeof stream.write;
  };
  client.on("connect", hook);
  hook();
}

/** The longest wait between two reconnection attempts, however long Redis has been away. */
export const RECONNECT_MAX_DELAY_MS = 500;

/**
 * ioredis's default backs off to 2 s between attempts (2 s for a Cluster too). A request waits
 * for two failed attempts before it is answered UNAVAILABLE, and the server notices a returning
 * Redis only at the next attempt. So after a long outage, answers took the whole command timeout
 * and recovery took up to 2 s. With 0.5 s at most, both stay short; the cost is one connection
 * attempt every 0.5 s while Redis is away.
 */
export function reconnectDelay(times: number): number {
  return Math.min(times * 50, RECONNECT_MAX_DELAY_MS);
}

/**
 * The Redis instances the engine runs on, and the routing of a `{xNNN}` hash tag to one of them:
 * instance = NNN mod N over QIM_REDIS_ADDR + QIM_MESSAGE_STORE_ADDRS in that order, or the
 * cluster, where the tag does the same job. Every client has the engine's scripts defined.
 */
export class RedisStore {
  private readonly instances: RedisClient[];
  readonly kind: TopologyConfig["kind"];

  constructor(readonly topology: TopologyConfig, opts: StoreOptions = {}) {
    const common = {
      connectTimeout: opts.connectTimeoutMs ?? 5000,
      commandTimeout: opts.commandTimeoutMs === 0 ? undefined : (opts.commandTimeoutMs ?? 10000),
      maxRetriesPerRequest: 2,
      enableOfflineQueue: true,
      retryStrategy: reconnectDelay,
    };
    this.kind = topology.kind;
    if (topology.kind === "cluster") {
      const cluster = new Cluster(topology.seeds.map(parseAddr), {
        redisOptions: common,
        scaleReads: "master",
        clusterRetryStrategy: reconnectDelay,
        slotsRefreshTimeout: 5000,
      });
      if (opts.coalesceWrites !== false) cluster.on("+node", (node: Redis) => coalesceWrites(node));
      this.instances = [cluster];
    } else {
      this.instances = topology.addrs.map((a) => new Redis({ ...parseAddr(a), ...common }));
      if (opts.coalesceWrites !== false) for (const c of this.instances) coalesceWrites(c as Redis);
    }
    const onError = opts.onError ?? (() => {});
    for (const c of this.instances) {
      defineScripts(c);
      c.on("error", onError);
    }
  }

  /** The client that owns keys carrying this hash tag. */
  clientFor(tag: string): RedisClient {
    if (this.instances.length === 1) return this.instances[0]!;
    return this.instances[tagShard(tag) % this.instances.length]!;
  }

  /** The client that owns this key (by its `{xNNN}` hash tag). */
  clientForKey(key: string): RedisClient {
    return this.clientFor(RedisStore.tagOf(key));
  }

  /**
   * Groups work by where it can go in one pipeline or one script call: `tags[i]` is the hash tag
   * of item i; items are grouped per instance, or per hash tag on a Cluster (where a pipeline or a
   * script must stay in one slot). Returns each group's client and item indexes, in input order.
   */
  byTarget(tags: readonly string[]): { client: RedisClient; idx: number[] }[] {
    const groups = new Map<RedisClient | string, { client: RedisClient; idx: number[] }>();
    const cluster = this.kind === "cluster";
    tags.forEach((tag, i) => {
      const client = this.clientFor(tag);
      const id = cluster ? tag : client;
      const g = groups.get(id);
      if (g) g.idx.push(i); else groups.set(id, { client, idx: [i] });
    });
    return [...groups.values()];
  }

  /** The `{xNNN}` routing hash tag of a key. */
  static tagOf(key: string): string {
    const m = /\{[a-z]\d{3}\}/.exec(key);
    if (!m) throw new Error(`key has no routing hash tag: ${key}`);
    return m[0];
  }

  /**
   * LLEN of many keys: one pipeline per instance, per hash tag on a Cluster (byTarget). The relay
   * and the registration task poll every bucket's queue with it.
   */
  async listLengths(keys: readonly string[]): Promise<number[]> {
    const out = new Array<number>(keys.length).fill(0);
    await Promise.all(this.byTarget(keys.map(RedisStore.tagOf)).map(async ({ client, idx }) => {
      const p = client.pipeline();
      for (const i of idx) p.llen(keys[i]!);
      const res = (await p.exec()) ?? [];
      res.forEach(([err, n], j) => {
        if (err) throw err;
        out[idx[j]!] = n as number;
      });
    }));
    return out;
  }

  /** Every distinct client (one per instance; the cluster client once). */
  clients(): readonly RedisClient[] {
    return this.instances;
  }

  /** Every node that holds data: each instance, or each master of the cluster (for SCAN). */
  dataNodes(): Redis[] {
    if (this.kind === "cluster") return (this.instances[0] as Cluster).nodes("master");
    return this.instances as Redis[];
  }

  async close(): Promise<void> {
    await Promise.all(this.instances.map((c) => c.quit().catch(() => c.disconnect())));
  }
}
