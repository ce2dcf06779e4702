/**
 * bench/admin — from one run:
 *   1. membership add+remove pairs/s and pair latency p50/p99 through the admin API (a real
 *      qim-admin-server process, mTLS with an operator certificate, audit log fdatasync'd), next
 *      to the same pairs called on core directly in this process, on the same Redis (ratio;
 *      target ≥ 0.5), and on core with an in-process relay (what the server also does);
 *   2. `qimctl --version` start-up time next to `node -e 0` (ratio).
 * Usage: node dist/bench/admin.js [--pairs N] [--concurrency C] [--json]
 */
import { execFile, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import * as grpc from "@grpc/grpc-js";
import { HealthImplementation, service as healthService } from "grpc-health-check";
import { connectAdmin } from "../admin-api/client.js";
import { createCa, issueClientCert, issueServerCert } from "../certs/pki.js";
import { ConversationService, OutboxRelay, RedisStore, RedisStreamsDispatchLog } from "../core/index.js";
import { freePort, startRedis } from "../test/harness/redis.js";

const run = promisify(execFile);
const args = process.argv.slice(2);
const flag = (name: string, dflt: number) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const PAIRS = flag("--pairs", 2000);
const CONCURRENCY = flag("--concurrency", 16);
const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

/** Runs `pairs` add+remove pairs, one in flight per worker, each worker on a group of its own. */
async function pairs(groups: string[], pairOf: (group: string, user: string) => Promise<void>) {
  const latencies: number[] = [];
  let next = 0;
  const start = process.hrtime.bigint();
  await Promise.all(groups.map(async (group) => {
    const user = randomUUID();
    for (;;) {
      if (next++ >= PAIRS) return;
      const t0 = process.hrtime.bigint();
      await pairOf(group, user);
      latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
  }));
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return { pairsPerSec: Math.round(PAIRS / seconds), p50Ms: +pct(latencies, 50).toFixed(2), p99Ms: +pct(latencies, 99).toFixed(2) };
}

/**
 * The floor of grpc-js here: empty unary calls (grpc.health.v1 Check, plaintext, client and server
 * in this process) at the same concurrency. A membership change through the API costs at least
 * this on top of the core work.
 */
async function grpcFloor(): Promise<{ callsPerSec: number; cpuUsPerCall: number }> {
  const server = new grpc.Server();
  new HealthImplementation({ "": "SERVING" }).addToServer(server);
  const port = await new Promise<number>((resolve, reject) => server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))));
  const Health = grpc.makeGenericClientConstructor(healthService, "Health");
  const client = new Health(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
    check: (req: { service: string }, cb: (err: grpc.ServiceError | null) => void) => void;
  };
  const call = () => new Promise<void>((resolve, reject) => client.check({ service: "" }, (e) => (e ? reject(e) : resolve())));
  const N = 4 * PAIRS;
  let next = 0;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => { while (next++ < 1000) await call(); }));
  next = 0;
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => { while (next++ < N) await call(); }));
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(c0);
  client.close();
  server.forceShutdown();
  return { callsPerSec: Math.round(N / seconds), cpuUsPerCall: Math.round((cpu.user + cpu.system) / N) };
}

async function startupMs(cmd: string[], times: number): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < times; i++) {
    const t0 = process.hrtime.bigint();
    await run(process.execPath, cmd, { cwd: ROOT });
    samples.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return samples.reduce((a, b) => a + b, 0) / samples.length;
}

async function main() {
  const dir = await mkdtemp(join(tmpdir(), "qim-bench-admin-"));
  const redis = await startRedis();
  const ca = createCa();
  const server = issueServerCert(ca, { hosts: ["localhost", "127.0.0.1"] });
  const operator = issueClientCert(ca, { name: "bench", role: "operator" });
  for (const [name, pem] of [["ca.pem", ca.certPem], ["server.pem", server.certPem], ["server-key.pem", server.keyPem]] as const) {
    await writeFile(join(dir, name), pem, { mode: 0o600 });
  }
  const port = await freePort();
  const child = spawn(process.execPath, [join(ROOT, "dist/admin-api/main.js"), "--listen", `127.0.0.1:${port}`, "--metrics-listen", "off",
    "--tls-ca", join(dir, "ca.pem"), "--tls-cert", join(dir, "server.pem"), "--tls-key", join(dir, "server-key.pem"),
    "--audit-log", join(dir, "audit.log"), "--redis", redis.addr], { stdio: ["ignore", "ignore", "pipe"] });
  await new Promise<void>((resolve, reject) => {
    let err = "";
    child.stderr!.on("data", (d: Buffer) => { err += d.toString(); if (err.includes("listening on")) resolve(); });
    child.once("exit", (code) => reject(new Error(`server exited ${code}: ${err}`)));
  });

  const store = new RedisStore({ kind: "instances", addrs: [redis.addr] });
  const engine = new ConversationService(store);
  // the server also relays every event it commits into the dispatch log: the same core work with
  // an in-process relay kicked per commit is the like-for-like comparison
  let relay: OutboxRelay | undefined;
  const relayedEngine = new ConversationService(store, { onCommit: (b) => relay?.kick(b) });
  relay = new OutboxRelay(store, engine.keys, new RedisStreamsDispatchLog(store, engine.keys, { clusterId: "qim", topicId: "dispatch", partitionCount: 8 }));
  relay.start(1000);
  const client = connectAdmin({ endpoint: `localhost:${port}`, caPem: ca.certPem, certPem: operator.certPem, keyPem: operator.keyPem });
  const out: Record<string, unknown> = { pairs: PAIRS, concurrency: CONCURRENCY };
  try {
    const tenant = randomUUID();
    const groupsFor = async () => {
      const gs: string[] = [];
      for (let i = 0; i < CONCURRENCY; i++) gs.push((await engine.createGroup({ tenant, owner: randomUUID(), members: Array.from({ length: 20 }, () => randomUUID()) })).group);
      return gs;
    };
    const viaCore = async (group: string, user: string) => {
      await engine.addMembers({ tenant, group, users: [user] });
      await engine.removeMembers({ tenant, group, users: [user] });
    };
    const viaCoreRelayed = async (group: string, user: string) => {
      await relayedEngine.addMembers({ tenant, group, users: [user] });
      await relayedEngine.removeMembers({ tenant, group, users: [user] });
    };
    const viaApi = async (group: string, user: string) => {
      await client.addMembers({ tenant, group, users: [user], dryRun: false });
      await client.removeMembers({ tenant, group, users: [user], dryRun: false });
    };
    // warm-up both paths
    await pairs(await groupsFor(), viaCore);
    await pairs(await groupsFor(), viaApi);
    const core1 = await pairs(await groupsFor(), viaCore);
    const api1 = await pairs(await groupsFor(), viaApi);
    const core2 = await pairs(await groupsFor(), viaCore);
    const api2 = await pairs(await groupsFor(), viaApi);
    const rel1 = await pairs(await groupsFor(), viaCoreRelayed);
    const rel2 = await pairs(await groupsFor(), viaCoreRelayed);
    const slower = <T extends { pairsPerSec: number }>(a: T, b: T) => (a.pairsPerSec >= b.pairsPerSec ? b : a);
    const core = slower(core1, core2);
    const api = slower(api1, api2);
    const relayed = slower(rel1, rel2);
    out.core = core;
    out.coreWithRelay = relayed;
    out.api = api;
    out.ratio = +(api.pairsPerSec / core.pairsPerSec).toFixed(3);
    out.ratioWithRelay = +(api.pairsPerSec / relayed.pairsPerSec).toFixed(3);
  } finally {
    client.close();
    await relay.stop();
    await store.close();
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
    await redis.stop();
    await rm(dir, { recursive: true, force: true });
  }
  out.grpcFloor = await grpcFloor();
  const nodeMs = await startupMs(["-e", "0"], 10);
  const qimctlMs = await startupMs([join(ROOT, "bin/qimctl.js"), "--version"], 10);
  out.startup = { nodeMs: +nodeMs.toFixed(1), qimctlMs: +qimctlMs.toFixed(1), ratio: +(qimctlMs / nodeMs).toFixed(2) };

  if (args.includes("--json")) { console.log(JSON.stringify(out, null, 2)); return; }
  const c = out.core as Record<string, number>;
  const a = out.api as Record<string, number>;
  const s = out.startup as Record<string, number>;
  console.log(`membership add+remove pairs, ${CONCURRENCY} groups × 1 pair in flight, ${PAIRS} pairs (the slower of two runs each):`);
  console.log(`  core directly        ${String(c.pairsPerSec).padStart(6)} pairs/s   p50 ${c.p50Ms} ms   p99 ${c.p99Ms} ms`);
  const r = out.coreWithRelay as Record<string, number>;
  console.log(`  core + relay         ${String(r.pairsPerSec).padStart(6)} pairs/s   p50 ${r.p50Ms} ms   p99 ${r.p99Ms} ms`);
  console.log(`  admin API over mTLS  ${String(a.pairsPerSec).padStart(6)} pairs/s   p50 ${a.p50Ms} ms   p99 ${a.p99Ms} ms   ratio ${String(out.ratio)} vs core (target ≥ 0.5), ${String(out.ratioWithRelay)} vs core + relay`);
  const f = out.grpcFloor as Record<string, number>;
  console.log(`grpc-js floor: empty unary calls (health Check, plaintext, one process) ${f.callsPerSec} calls/s, ${f.cpuUsPerCall} µs CPU a call`);
  console.log(`start-up: qimctl --version ${s.qimctlMs} ms vs node -e 0 ${s.nodeMs} ms = ${s.ratio}× (mean of 10)`);
}

main().catch((err) => { console.error(err); process.exit(1); });
