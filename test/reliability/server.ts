/**
 * The reliability tests' admin server: a real qim admin server over mTLS on a real Redis topology,
 * clients with the test PKI's certificates (each connectAdmin() call is a connection of its own:
 * grpc-js shares a connection only between equal credentials objects, and each call makes one),
 * and what the checks need afterwards: wait for the in-process relay to empty every outbox, read
 * every dispatch record, a "nothing changed" digest of every data node.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connectAdmin, type AdminClient } from "../../admin-api/client.js";
import { startAdminServer, type AdminServer, type AdminServerOptions } from "../../server/node.js";
import { RedisStore, RedisStreamsDispatchLog, type DispatchEntry } from "../../core/index.js";
import type { Redis } from "ioredis";
import { testPki, type TestPki } from "../certs/fixture.js";
import { projectionSettled } from "../harness/projection.js";
import { startTopology, type TestTopology, type TopologyKind } from "../harness/redis.js";
import { readWholeLog } from "./common.js";


/** The server's dispatch-log identity (the admin server's default). */
export const DISPATCH = { clusterId: "qim", topicId: "dispatch", partitionCount: 8 };

export interface ReliabilityServer {
  topology: TestTopology;
  server: AdminServer;
  pki: TestPki;
  /** A store of the test's own (never the server's connections). */
  store: RedisStore;
  /** Lines the server logged (INTERNAL failures are logged with their stack). */
  log: string[];
  connect(who: keyof TestPki, opts?: { deadlineMs?: number }): AdminClient;
  /** Polls (25 ms apart, at most `attempts` times) until every outbox is empty; throws otherwise. */
  outboxDrained(attempts?: number): Promise<void>;
  /**
   * Polls until nothing moves in the background: every outbox empty, every partition's lag 0, no
   * registration pending (cf. test/harness/projection.ts), at most `attempts` times 25 ms apart.
   */
  settled(attempts?: number): Promise<void>;
  /** Every dispatch-log record of every partition. */
  dispatched(): Promise<DispatchEntry[]>;
  /** Every key of every data node with its full value, the dispatch log aside (cf. storeDigest). */
  digest(): Promise<string>;
  /**
   * Every write to any key but the dispatch log's, as "event key", from Redis keyspace
   * notifications (on from the start, on every data node). `writes.mark()` then `writes.since(m)`
   * gives the writes in between: since() first round-trips a PING on each subscriber connection,
   * so every notification Redis published before it is in. A call that wrote nothing cannot have
   * changed the digest; this is how the fuzz checks every refused call without a full digest each.
   */
  writes: { mark(): number; since(mark: number): Promise<string[]> };
  close(): Promise<void>;
}

export async function startReliabilityServer(kind: TopologyKind, extra: Partial<AdminServerOptions> = {}): Promise<ReliabilityServer> {
  const pki = await testPki();
  const topology = await startTopology(kind);
  const dir = await mkdtemp(join(tmpdir(), "qim-reliability-"));
  const log: string[] = [];
  const clients: AdminClient[] = [];
  let server: AdminServer | undefined;
  let store: RedisStore | undefined;
  try {
    server = await startAdminServer({
      topology: topology.config,
      listen: "127.0.0.1:0",
      metricsListen: null,
      auditPath: join(dir, "audit.log"),
      tls: { caPem: pki.ca.certPem, certPem: pki.server.certPem, keyPem: pki.server.keyPem },
      dispatch: DISPATCH,
      log: (line) => log.push(line),
      ...extra,
    });
    store = new RedisStore(topology.config);
  } catch (err) {
    await server?.close();
    await topology.stop();
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  const srv = server;
  const st = store;
  const written: string[] = [];
  const subscribers: Redis[] = [];
  for (const node of st.dataNodes()) {
    await node.config("SET", "notify-keyspace-events", "KEA");
    const sub = node.duplicate();
    sub.on("pmessage", (_pattern: string, channel: string, key: string) => {
      const event = channel.slice(channel.indexOf(":") + 1);
      // a key that Redis expires is no write of the call in flight: its TTL was set by an earlier
      // write (e.g. the list's per-user reconcile bound, docs/conversation-list.md), which shows
      // as that write's own event
      if (event === "expired" || key.includes(":dlog:")) return;
      written.push(`${event} ${key}`);
    });
    await sub.psubscribe("__keyevent@*__:*");
    subscribers.push(sub);
  }
  const dlog = new RedisStreamsDispatchLog(st, srv.runtime.keys, DISPATCH);
  const keysOf = async (pattern: string) => (await Promise.all(st.dataNodes().map((n) => n.keys(pattern)))).flat();
  // a fanout job (issue 22) has left the outbox but is not wholly in the log yet
  const outboxDepth = async () => (await st.listLengths([...await keysOf("*:outbox"), ...await keysOf("*:fanout:jobs")])).reduce((a, n) => a + n, 0);

  return {
    topology,
    server: srv,
    pki,
    store: st,
    log,
    connect(who, opts = {}) {
      const c = connectAdmin({
        endpoint: `localhost:${srv.port}`,
        caPem: pki.ca.certPem,
        certPem: pki[who].certPem,
        keyPem: pki[who].keyPem,
        deadlineMs: opts.deadlineMs ?? 30_000,
      });
      clients.push(c);
      return c;
    },
    async outboxDrained(attempts = 1200) {
      let depth = -1;
      for (let i = 0; i < attempts; i++) {
        if ((depth = await outboxDepth()) === 0) return;
        await new Promise((r) => setTimeout(r, 25));
      }
      throw new Error(`the relay did not empty the outboxes after ${attempts} polls: ${depth} entries left`);
    },
    async settled(attempts = 1200) {
      await projectionSettled(srv, outboxDepth, attempts);
    },
    async dispatched() {
      return (await readWholeLog(dlog)).flat();
    },
    async digest() {
      const parts: string[] = [];
      for (const node of st.dataNodes()) {
        const keys = (await node.keys("*")).filter((k) => !k.includes(":dlog:")).sort();
        parts.push(await pipelinedDump(node, keys));
      }
      return parts.join("\n");
    },
    writes: {
      mark: () => written.length,
      async since(mark) {
        await Promise.all(subscribers.map((sub) => sub.ping()));
        return written.slice(mark);
      },
    },
    async close() {
      for (const c of clients) c.close();
      for (const sub of subscribers) sub.disconnect();
      await srv.close();
      await st.close();
      await topology.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * test/harness/dump.ts dumpKeys, line for line the same text, in two pipelines instead of two
 * round trips a key: the fuzz digests the store after every refused call.
 */
async function pipelinedDump(node: Redis, keys: readonly string[]): Promise<string> {
  if (keys.length === 0) return "";
  const typed = await keys.reduce((p, k) => p.type(k), node.pipeline()).exec();
  const types = (typed ?? []).map(([err, t]) => { if (err) throw err; return String(t); });
  const reads = node.pipeline();
  keys.forEach((key, i) => {
    const type = types[i];
    if (type === "string") reads.get(key);
    else if (type === "hash") reads.hgetall(key);
    else if (type === "zset") reads.zrange(key, "0", "-1", "WITHSCORES");
    else if (type === "list") reads.lrange(key, 0, -1);
    else if (type === "set") reads.smembers(key);
    else reads.echo(type!);
  });
  const values = (await reads.exec()) ?? [];
  return keys.map((key, i) => {
    const [err, v] = values[i]!;
    if (err) throw err;
    const type = types[i]!;
    const value = type === "hash" ? Object.entries(v as Record<string, string>).sort()
      : type === "set" ? (v as string[]).sort()
        : ["string", "zset", "list"].includes(type) ? v
          : type === "none" ? null : `<${type}>`;
    return `${key} ${type} ${JSON.stringify(value)}`;
  }).join("\n");
}
