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
import { startAdminServer, type AdminServer, type AdminServerOptions } from "../../admin-api/server.js";
import { LOG_START, RedisStore, RedisStreamsDispatchLog, type DispatchEntry, type LogPosition } from "../../core/index.js";
import { testPki, type TestPki } from "../certs/fixture.js";
import { dumpKeys } from "../harness/dump.js";
import { startTopology, type TestTopology, type TopologyKind } from "../harness/redis.js";

/** QIM_SOAK=1: the long mode (more operations); run by hand, not in CI. */
export const SOAK = process.env.QIM_SOAK === "1";

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
  /** Every dispatch-log record of every partition. */
  dispatched(): Promise<DispatchEntry[]>;
  /** Every key of every data node with its full value, the dispatch log aside (cf. storeDigest). */
  digest(): Promise<string>;
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
  const dlog = new RedisStreamsDispatchLog(st, srv.engine.keys, DISPATCH);
  const keysOf = async (pattern: string) => (await Promise.all(st.dataNodes().map((n) => n.keys(pattern)))).flat();

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
        depth = 0;
        for (const key of await keysOf("*:outbox")) depth += await st.clientForKey(key).llen(key);
        if (depth === 0) return;
        await new Promise((r) => setTimeout(r, 25));
      }
      throw new Error(`the relay did not empty the outboxes after ${attempts} polls: ${depth} entries left`);
    },
    async dispatched() {
      const out: DispatchEntry[] = [];
      for (let p = 0; p < DISPATCH.partitionCount; p++) {
        let from: LogPosition = LOG_START;
        for (;;) {
          const { entries } = await dlog.readFrom(p, from, 500);
          if (entries.length === 0) break;
          out.push(...entries);
          const last = entries[entries.length - 1]!;
          from = { offset: last.offset + 1, id: last.id };
        }
      }
      return out;
    },
    async digest() {
      const parts: string[] = [];
      for (const node of st.dataNodes()) {
        const keys = (await node.keys("*")).filter((k) => !k.includes(":dlog:")).sort();
        parts.push(await dumpKeys(node, keys));
      }
      return parts.join("\n");
    },
    async close() {
      for (const c of clients) c.close();
      await srv.close();
      await st.close();
      await topology.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
