import type { ConnectionOptions } from "node:tls";
import { Cluster, Redis, type RedisOptions } from "ioredis";
import { parseRedisAddr, redisAddrText, redisUserOf, tagShard, TLS_VERIFY_CODES, UnavailableError, type TopologyConfig } from "../base/index.js";
import { defineScripts, type Script } from "../lua/index.js";
import { metrics } from "./metrics.js";

/** One connection to the store: a standalone instance or the whole Cluster. */
export type RedisClient = Redis | Cluster;

export interface StoreOptions {
  /** ioredis connect timeout and per-command bound, so an unreachable store fails fast. */
  connectTimeoutMs?: number;
  commandTimeoutMs?: number;
  /** Connection errors (ioredis reconnects by itself); without a handler ioredis prints each one. */
  onError?: (err: Error) => void;
  /** One socket write per connection per iteration of the event loop (coalesceWrites; default true). */
  coalesceWrites?: boolean;
}

/**
 * Makes a connection send the commands written to it during one iteration of the event loop in
 * one socket write: the socket is corked at the first write and uncorked in that iteration's
 * check phase (setImmediate), so the commands of every callback the iteration ran — each gRPC
 * request read, each Redis reply read, the relay's timer, and the microtasks of each — leave, in
 * order, in one writev before the loop can wait for I/O again (a pending immediate makes its poll
 * phase return at once), with no timer. ioredis writes every command on its own, and a write to a
 * loopback socket is a system call that also wakes redis-server: on these machines that was the
 * largest single cost of a membership change (bench/admin: about 14 writes per add+remove pair in
 * the admin server, each a syscall). Uncorking after the first callback's microtasks instead
 * still left one write per callback: 16.7 % of the admin server's profile samples in bench/admin.
 * The hook is put on each new socket (ioredis makes one per connection, and another on reconnect).
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
        setImmediate(uncork);
      }
      return (write as (...a: unknown[]) => boolean).apply(this, args);
    } as typeof stream.write;
  };
  client.on("connect", hook);
  hook();
}

/**
 * An acknowledgement that fewer replicas than redis.ack_replicas confirmed in time (issue 26): the
 * write is on the master and may or may not survive its failover. UNAVAILABLE, so the client
 * retries with the same idempotency key; the retry is answered as a duplicate once a replica has it.
 */
export class ReplicaAckError extends UnavailableError {
  constructor(readonly wanted: number, readonly confirmed: number | null, readonly timeoutMs: number, cause?: string) {
    super(confirmed === null
      ? `the write is not confirmed by a replica (WAIT failed: ${cause ?? "unknown"}); retry with the same id`
      : `the write is confirmed by ${confirmed} of the ${wanted} replica(s) redis.ack_replicas asks for within ${timeoutMs} ms; retry with the same id`);
    this.name = "ReplicaAckError";
  }
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

/** After Redis refused the credentials or the TLS handshake, the wait between attempts. */
export const REFUSED_RECONNECT_DELAY_MS = 30_000;

/**
 * Why Redis refused this process, as one line naming the user or the check that failed (never a
 * secret), or null for any other error (an outage, a timeout): a refusal does not heal by
 * retrying, so the store waits REFUSED_RECONNECT_DELAY_MS between attempts instead of hammering.
 */
export function refusalOf(err: Error & { code?: string }, addr: string, user: string, hasPassword = true): string | null {
  const msg = err.message ?? "";
  if (!hasPassword && /^NOAUTH/.test(msg)) {
    return `Redis at ${addr} requires authentication (NOAUTH) and no password is configured: set the user (--redis-user) and the password (--redis-password-file or QIM_REDIS_PASSWORD)`;
  }
  if (/^(WRONGPASS|NOAUTH)|invalid username-password pair|user is disabled|invalid password/i.test(msg)) {
    return `Redis refused the credentials for user ${user} at ${addr} (${msg.split(/[\r\n]/)[0]!.slice(0, 120)})`;
  }
  if (/^NOPERM/.test(msg)) return `Redis user ${user} at ${addr} lacks a permission the engine needs (${msg.slice(0, 160)})`;
  if (err.code && TLS_VERIFY_CODES.has(err.code)) {
    return `Redis TLS handshake with ${addr} failed: the server certificate does not verify (${err.code}: ${msg.slice(0, 120)}); check the CA (--redis-tls-ca) and the server name`;
  }
  if (/wrong version number|packet length too long|unknown protocol/i.test(msg) || err.code === "ERR_SSL_WRONG_VERSION_NUMBER") {
    return `Redis at ${addr} did not answer TLS (${msg.slice(0, 80)}): is it a plaintext port? (use redis:// or the tls-port)`;
  }
  return null;
}

/** The ioredis options that authenticate and protect one address's connection. */
function securityOptions(topology: TopologyConfig, addr: string): Pick<RedisOptions, "username" | "password" | "tls"> {
  const out: Pick<RedisOptions, "username" | "password" | "tls"> = {};
  if (topology.auth) {
    out.password = topology.auth.password;
    if (topology.auth.username !== undefined) out.username = topology.auth.username;
  }
  if (topology.tls || parseRedisAddr(addr).tls) {
    const t = topology.tls ?? {};
    const tls: ConnectionOptions = {};
    if (t.caPem) tls.ca = t.caPem;
    if (t.certPem) tls.cert = t.certPem;
    if (t.keyPem) tls.key = t.keyPem;
    if (t.servername) tls.servername = t.servername;
    out.tls = tls;
  }
  return out;
}

/**
 * The Redis instances the engine runs on, and the routing of a `{xNNN}` hash tag to one of them:
 * instance = NNN mod N over QIM_REDIS_ADDR + QIM_MESSAGE_STORE_ADDRS in that order, or the
 * cluster, where the tag does the same job. Every client has the engine's scripts defined.
 */
export class RedisStore {
  private readonly instances: RedisClient[];
  readonly kind: TopologyConfig["kind"];

  constructor(readonly topology: TopologyConfig, private readonly opts: StoreOptions = {}) {
    const user = redisUserOf(topology);
    const hasPassword = topology.auth !== undefined;
    // the last refusal per address: a refused connection retries slowly (see refusalOf)
    const refused = this.refusals;
    const common = (addr: string) => ({
      connectTimeout: opts.connectTimeoutMs ?? 5000,
      commandTimeout: opts.commandTimeoutMs === 0 ? undefined : (opts.commandTimeoutMs ?? 10000),
      maxRetriesPerRequest: 2,
      enableOfflineQueue: true,
      retryStrategy: (times: number) => (refused.has(addr) ? REFUSED_RECONNECT_DELAY_MS : reconnectDelay(times)),
      ...securityOptions(topology, addr),
    });
    const onError = opts.onError ?? (() => {});
    const watch = (client: RedisClient, addr: string, probe?: () => void) => {
      client.on("error", (err: Error & { lastNodeError?: Error }) => {
        // A Cluster reports a seed that refused it only as "Failed to refresh slots cache."
        // (ClusterAllFailedError): the node's own error, the one that says why, is lastNodeError.
        const cause = err.lastNodeError ?? err;
        const why = refusalOf(cause, addr, user, hasPassword);
        // there, the probe's error says more than the Cluster's "Connection is closed."
        const probing = !why && err.lastNodeError !== undefined && probe !== undefined;
        if (!probing) this.lastErrors.set(addr, cause.message);
        if (why) {
          refused.set(addr, why);
          onError(new UnavailableError(why));
        } else onError(err);
        if (probing) probe();
      });
      client.on("ready", () => {
        refused.delete(addr);
        this.lastErrors.delete(addr);
      });
    };
    this.kind = topology.kind;
    if (topology.kind === "cluster") {
      const seed = topology.seeds[0] ?? "";
      const cluster = new Cluster(topology.seeds.map((a) => { const { host, port } = parseRedisAddr(a); return { host, port }; }), {
        redisOptions: common(seed),
        scaleReads: "master",
        clusterRetryStrategy: (times: number) => (refused.size > 0 ? REFUSED_RECONNECT_DELAY_MS : reconnectDelay(times)),
        slotsRefreshTimeout: 5000,
      });
      cluster.on("+node", (node: Redis) => {
        if (opts.coalesceWrites !== false) coalesceWrites(node);
        const addr = `${node.options.host}:${node.options.port}`;
        node.on("error", (err: Error) => {
          const why = refusalOf(err, addr, user, hasPassword);
          if (why) refused.set(addr, why);
        });
        node.on("ready", () => refused.delete(addr));
      });
      // The connections a Cluster opens to its seeds to read the slots swallow their own errors: a
      // refused TLS handshake (wrong CA) or a plaintext client on a TLS port shows only as
      // "Connection is closed.". To learn why, and so wait REFUSED_RECONNECT_DELAY_MS and not
      // 0.5 s when it is a refusal, one connection at a time goes to the first seed with the same
      // options and no retry; its error is what the Cluster's would have said.
      const where = topology.seeds.map(redisAddrText).join(",");
      let probing = false;
      const probe = () => {
        if (probing) return;
        probing = true;
        const { host, port } = parseRedisAddr(seed);
        const r = new Redis({ host, port, ...common(seed), lazyConnect: true, retryStrategy: () => null, enableOfflineQueue: false });
        let first: Error | undefined;
        r.on("error", (err: Error) => { first ??= err; });
        void r.connect().catch(() => undefined).finally(() => {
          r.disconnect();
          probing = false;
          if (!first) return;
          const why = refusalOf(first, where, user, hasPassword);
          this.lastErrors.set(where, first.message);
          if (why && !refused.has(where)) {
            refused.set(where, why);
            onError(new UnavailableError(why));
          }
        });
      };
      watch(cluster, where, probe);
      this.instances = [cluster];
    } else {
      this.instances = topology.addrs.map((a) => {
        const { host, port } = parseRedisAddr(a);
        const client = new Redis({ host, port, ...common(redisAddrText(a)) });
        watch(client, redisAddrText(a));
        return client;
      });
      if (opts.coalesceWrites !== false) for (const c of this.instances) coalesceWrites(c as Redis);
    }
    for (const c of this.instances) defineScripts(c);
  }

  /**
   * Runs a script whose answer acknowledges a write to a client (a commit: a send, a membership
   * change, a group's creation). With the topology's `ack` policy (redis.ack_replicas > 0) the
   * script and `WAIT replicas timeout` go in one pipeline: the same connection, so on a Cluster
   * the node that ran the script (ioredis sends a pipeline to the node of its keys' slot, and
   * WAIT has no key), and, should ioredis resend them after a reconnection, again in that order.
   * WAIT waits for every write this connection made before it, so a WAIT that returns `replicas`
   * covers the script's writes. A domain refusal needs no WAIT but costs little with one.
   */
  async commit<K extends string, A, R>(script: Script<K, A, R>, client: RedisClient, keys: Readonly<Record<K, string>>, args: A): Promise<R> {
    const ack = this.ackPolicy;
    if (ack === null) return script.run(client, keys, args);
    const p = client.pipeline();
    script.queue(p, keys, args);
    p.wait(ack.replicas, ack.timeoutMs);
    const res = (await p.exec()) ?? [];
    const [scriptErr, raw] = res[0] ?? [new Error("no reply to the commit script"), null];
    if (scriptErr) throw scriptErr;
    const reply = script.decode(raw);
    const [waitErr, confirmed] = res[1] ?? [new Error("no reply to WAIT"), null];
    this.checkAck(waitErr, confirmed);
    return reply;
  }

  /**
   * The topology's acknowledgement policy (redis.ack_replicas > 0), or null. Besides the commit
   * scripts (commit()), the writes the pipeline after a commit relies on wait for it too — the
   * relay's appends to the dispatch log before it marks a commit dispatched, and the projection's
   * checkpoint advances — so that a failover cannot keep a mark or a checkpoint whose records it lost.
   */
  get ackPolicy(): { replicas: number; timeoutMs: number } | null {
    const ack = this.topology.ack;
    return ack && ack.replicas > 0 ? ack : null;
  }

  /** WAIT's outcome against the policy: throws ReplicaAckError (and counts it) when it falls short. */
  checkAck(waitErr: Error | null | undefined, confirmed: unknown): void {
    const ack = this.ackPolicy;
    if (ack === null) return;
    if (waitErr || Number(confirmed) < ack.replicas) {
      metrics.replicaAckFailures.inc();
      throw new ReplicaAckError(ack.replicas, waitErr ? null : Number(confirmed), ack.timeoutMs, waitErr?.message);
    }
  }

  /** address → the message of the last connection error there (for verify's answer). */
  private readonly lastErrors = new Map<string, string>();

  /** address → the one-line reason Redis refused this process there (credentials, TLS), until it is accepted. */
  private readonly refusals = new Map<string, string>();

  /** The reasons Redis currently refuses this process, one line per address (empty when none). */
  refused(): string[] {
    return [...this.refusals.values()];
  }

  /**
   * Pings every instance (the Cluster through one of its nodes) within `timeoutMs`: resolves once
   * all answer, rejects with an UnavailableError of one clear line otherwise — at once, without
   * waiting out the timeout, when Redis refused the credentials or the TLS handshake. Start-up
   * calls it before anything else touches the store.
   */
  async verify(timeoutMs = 10_000): Promise<void> {
    await Promise.all(this.instances.map((client, i) => new Promise<void>((resolve, reject) => {
      const where = this.addressOf(i);
      let done = false;
      const finish = (err?: Error) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        clearInterval(watcher);
        if (err) reject(err); else resolve();
      };
      const tlsHint = (last: string | undefined) => last !== undefined && /ECONNRESET/.test(last) && !this.topology.tls ? " (a TLS port? use rediss://host:port or --redis-tls-ca)" : "";
      // a Cluster that reaches no node answers nothing: its commands wait, so say what went wrong last
      const timer = setTimeout(() => {
        const last = this.lastErrors.get(where);
        const why = this.refused()[0];
        finish(new UnavailableError(`Redis at ${where} did not answer within ${timeoutMs} ms${why ? `: ${why}` : last !== undefined ? ` (last error: ${last})${tlsHint(last)}` : ""}`));
      }, timeoutMs);
      // a refusal is known from the connection's error event before any command fails
      const watcher = setInterval(() => { const why = this.refused()[0]; if (why) finish(new UnavailableError(why)); }, 20);
      client.ping().then(() => finish(), (err: Error) => {
        const why = this.refused()[0] ?? refusalOf(err, where, redisUserOf(this.topology), this.topology.auth !== undefined);
        const last = this.lastErrors.get(where);
        finish(new UnavailableError(why ?? `Redis at ${where} is unreachable: ${last ?? err.message}${tlsHint(last)}`));
      });
    })));
  }

  /** Instance i's address as errors name it (a Cluster's seeds, comma-separated). */
  private addressOf(i: number): string {
    return this.topology.kind === "cluster" ? this.topology.seeds.map(redisAddrText).join(",") : redisAddrText(this.topology.addrs[i]!);
  }

  /**
   * Whether each instance (the Cluster as one) answers now: it does not refuse this process's
   * credentials or TLS, and it answers a PING (within the command timeout). Each answer is also
   * `qim_store_reachable` of that instance, so that the admin server's health probe, which calls
   * this every 2 s, keeps the gauge current.
   */
  async reachability(): Promise<boolean[]> {
    const up = await Promise.all(this.instances.map(async (client, i) => {
      // a refusal is known without waiting for a PING to time out
      const refused = this.kind === "cluster" ? this.refusals.size > 0 : this.refusals.has(this.addressOf(i));
      return !refused && await client.ping().then(() => true, () => false);
    }));
    up.forEach((ok, i) => metrics.reachable.set({ redis_instance: String(i), addr: this.addressOf(i) }, ok ? 1 : 0));
    return up;
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

  /** Stores of their own connections made by dedicated(), closed with this one. */
  private readonly dedicatedStores: RedisStore[] = [];

  /**
   * A store with connections of its own to the same Redis (same topology and options), closed
   * and disconnected with this one. ioredis answers a connection's commands in order, so a
   * command written behind a deep pipeline or a long script of this store waits for all of it:
   * traffic that must keep a deadline whatever else the node does (the cluster's heartbeats and
   * lease renewals) goes over such a store and never queues behind the node's own bulk work
   * (issue 22). Redis itself still runs one command at a time; that each call stays short is
   * REDIS_CALL_MEMBER_BUDGET's part.
   */
  dedicated(): RedisStore {
    const store = new RedisStore(this.topology, this.opts);
    this.dedicatedStores.push(store);
    return store;
  }

  /**
   * Whether every instance answers a PING within `timeoutMs` (an error, BUSY included, is no
   * answer): unlike reachability(), bounded by `timeoutMs` rather than the command timeout.
   */
  async answers(timeoutMs: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<boolean>((resolve) => { timer = setTimeout(() => resolve(false), timeoutMs); });
    const all = Promise.all(this.instances.map((c) => c.ping())).then(() => true, () => false);
    try {
      return await Promise.race([all, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Drops every connection at once (this store's and its dedicated ones'), without QUIT: every
   * command waiting for an answer, queued while Redis is away or still to be retried fails at
   * once with "Connection is closed", and no reconnection follows. A stop whose Redis is gone
   * calls it so that no wait on Redis outlives its deadline.
   */
  disconnect(): void {
    for (const c of this.instances) c.disconnect();
    for (const s of this.dedicatedStores) s.disconnect();
  }

  /**
   * QUIT on every connected client; one that is not connected (refused, unreachable, still
   * reconnecting) is disconnected at once — a QUIT would wait in its offline queue for the
   * command timeout (a store refused by its CA took 10 s to close).
   */
  async close(): Promise<void> {
    await Promise.all(this.dedicatedStores.map((s) => s.close()));
    await Promise.all(this.instances.map(async (c) => {
      if (c.status !== "ready") { c.disconnect(); return; }
      await c.quit().catch(() => c.disconnect());
    }));
  }
}
