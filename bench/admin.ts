/**
 * bench/admin — the admin API against core, each path measured with only its own work running:
 *   1. membership add+remove pairs/s and pair latency p50/p99, for
 *      - core alone: `Engine` in this process, no relay anywhere, no server running;
 *      - core + relay: the same with an in-process outbox relay kicked per commit and sweeping
 *        every second (what the server also does with every event it commits), no server running;
 *      - core + relay + projection: an EngineRuntime in this process, wired and started as the
 *        server's (relay kicked per commit and sweeping every second, the session projection's
 *        low-latency path, its durable consumer polling, the registration task), on a key prefix
 *        and dispatch topic of its own, no gRPC, no audit, no server running;
 *      - the admin API: a real qim-admin-server child process started for this phase (mTLS with an
 *        operator certificate, audit log fdatasync'd), nothing else of this bench touching Redis;
 *      - the admin API of an API node: the same server started with --cluster-units relay (docs/cluster.md
 *        "Node roles"): it commits and relays what it commits, and no node projects during the phase;
 *   2. grpc-js's empty unary call (grpc.health.v1 Check, plaintext, client and server in this
 *      process, same concurrency): calls/s and CPU µs a call;
 *   3. the API's limit on this machine: 1 / (core+relay pair time + 2 × empty call CPU) — a pair is
 *      two calls — and the API's efficiency against it (the issue's formula); the same with the
 *      engine work the server really does per pair: 1 / (core+relay+projection pair time + 2 ×
 *      empty call CPU); targets, each server against the limit of the engine work it does: the API
 *      node's efficiency vs the issue's limit with the empty call over mTLS to that server (the
 *      transport its calls must cross; the plaintext in-process figure is printed beside it) ≥ 0.8,
 *      the all-in-one server's vs the limit with projection ≥ 0.8, and p99 ≤ 3× p50 for both;
 *      next to it, empty calls over mTLS to the server process itself (latency, CPU of both ends)
 *      and the same limit with their CPU;
 *   4. CPU µs per pair of this process (the client), the server and redis-server (/proc), and the
 *      server's own diagnostics for the measured API phase (QIM_ADMIN_DIAGNOSTICS: event-loop
 *      delay, GC, audit flushes), bracketed with SIGUSR2;
 *   5. `qimctl --version` start-up time next to `node -e 0` (ratio).
 * Every round runs the four measurements once; the summary gives the median over rounds.
 * Usage: node dist/bench/admin.js [--pairs N] [--concurrency C] [--rounds R] [--json]
 *          [--server-cpu-prof DIR] [--client-cpu-prof PREFIX] [--compare OTHER/dist/server/main.js [--compare-node-args "FLAGS"]] [--server-args "FLAGS"] [--server-node-args "FLAGS"] [--no-startup] [--verbose]
 * --server-cpu-prof DIR: the server writes a CPU profile of each measured API phase there
 * (interval-1.cpuprofile, interval-3.cpuprofile, …; the even ones are the warm-ups).
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import * as grpc from "@grpc/grpc-js";
import { HealthImplementation, service as healthService } from "grpc-health-check";
import { connectAdmin } from "../admin-api/client.js";
import { SERVER_NODE_FLAGS, semiSpaceMiB } from "../server/node-flags.js";
import { createCa, issueClientCert, issueServerCert } from "../certs/pki.js";
import { ConversationService, EngineRuntime, OutboxRelay, RedisStore, RedisStreamsDispatchLog } from "../core/index.js";
import { freePort, startRedis } from "../test/harness/redis.js";
import { flag } from "./args.js";

const run = promisify(execFile);
const args = process.argv.slice(2);
const option = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const PAIRS = flag("--pairs", 2000);
const CONCURRENCY = flag("--concurrency", 16);
const ROUNDS = flag("--rounds", 3);
const CPU_PROF = option("--server-cpu-prof");
const CLIENT_PROF = option("--client-cpu-prof");
/** Another build's dist/server/main.js, measured in every round next to this one (A/B on a noisy machine). */
const COMPARE = option("--compare");

/** A CPU profile of this process from now until the returned function writes it. */
async function startProfile(): Promise<(file: string) => Promise<void>> {
  const { Session } = await import("node:inspector");
  const session = new Session();
  session.connect();
  const post = <T>(method: string) => new Promise<T>((resolve, reject) => session.post(method, (e, r) => (e ? reject(e) : resolve(r as T))));
  await post("Profiler.enable");
  await post("Profiler.start");
  return async (file) => {
    const { profile } = await post<{ profile: unknown }>("Profiler.stop");
    await writeFile(file, JSON.stringify(profile));
    session.disconnect();
  };
}
const VERBOSE = args.includes("--verbose");
/** More qim-admin-server flags, for experiments (e.g. --server-args "--no-audit-fsync"). */
const SERVER_ARGS = (option("--server-args") ?? "").split(" ").filter(Boolean);
/** Node/V8 flags for the server process instead of the ones it ships with (SERVER_NODE_FLAGS), for experiments. */
const SERVER_NODE_ARGS = option("--server-node-args")?.split(" ").filter(Boolean) ?? [...SERVER_NODE_FLAGS];
/** With --compare: Node/V8 flags for the compared server instead (--compare may then name this build). */
const COMPARE_NODE_ARGS = option("--compare-node-args")?.split(" ").filter(Boolean);
const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const MAIN_ENTRY = join(ROOT, "dist/server/main.js");
const PARTITIONS = 8;

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const median = (xs: number[]) => pct(xs, 50);

/** CPU µs a process used so far (utime + stime from /proc; clock ticks of 10 ms). */
function procCpuUs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}
const selfCpuUs = () => { const c = process.cpuUsage(); return c.user + c.system; };

interface PairStats {
  pairsPerSec: number; p50Ms: number; p99Ms: number; maxMs: number; cpuUsPerPair: Record<string, number>;
  /** Redis commands per pair (INFO commandstats), and Redis µs of each per pair. */
  redisPerPair?: Record<string, { calls: number; us: number }>;
}

/** INFO commandstats of one Redis: calls and usec per command. */
async function commandStats(client: import("ioredis").Redis): Promise<Map<string, { calls: number; usec: number }>> {
  const out = new Map<string, { calls: number; usec: number }>();
  for (const m of (await client.info("commandstats")).matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) out.set(m[1]!, { calls: Number(m[2]), usec: Number(m[3]) });
  return out;
}
let statsClient: import("ioredis").Redis | undefined;

/**
 * Runs PAIRS add+remove pairs, one in flight per worker, each worker on a group of its own; CPU of
 * this process and of `pids` per pair over the same interval.
 */
async function pairs(groups: string[], pairOf: (group: string, user: string) => Promise<void>, pids: Record<string, number>, count = PAIRS): Promise<PairStats> {
  const latencies: number[] = [];
  let next = 0;
  const cmd0 = statsClient ? await commandStats(statsClient) : undefined;
  const cpu0 = { client: selfCpuUs(), ...Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, procCpuUs(pid)])) } as Record<string, number>;
  const start = process.hrtime.bigint();
  await Promise.all(groups.map(async (group) => {
    const user = randomUUID();
    for (;;) {
      if (next++ >= count) return;
      const t0 = process.hrtime.bigint();
      await pairOf(group, user);
      latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
  }));
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  const cpu1 = { client: selfCpuUs(), ...Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, procCpuUs(pid)])) } as Record<string, number>;
  let redisPerPair: PairStats["redisPerPair"];
  if (cmd0) {
    redisPerPair = {};
    for (const [name, v] of await commandStats(statsClient!)) {
      const calls = v.calls - (cmd0.get(name)?.calls ?? 0);
      if (name === "info" || calls === 0) continue;
      redisPerPair[name] = { calls: +(calls / count).toFixed(2), us: +((v.usec - (cmd0.get(name)?.usec ?? 0)) / count).toFixed(1) };
    }
  }
  return {
    ...(redisPerPair ? { redisPerPair } : {}),
    pairsPerSec: Math.round(count / seconds), p50Ms: +pct(latencies, 50).toFixed(2), p99Ms: +pct(latencies, 99).toFixed(2), maxMs: +Math.max(...latencies).toFixed(2),
    cpuUsPerPair: Object.fromEntries(Object.keys(cpu0).map((k) => [k, Math.round((cpu1[k]! - cpu0[k]!) / count)])),
  };
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

/**
 * Empty unary calls (grpc.health.v1 Check) to the real server over mTLS with the operator
 * certificate, same concurrency: what the API's transport costs there (latency, and CPU a call
 * of this process and of the server), next to the membership pairs of the same server.
 */
async function emptyOverMtls(port: number, ca: string, cert: string, key: string, serverPid: number) {
  const Health = grpc.makeGenericClientConstructor(healthService, "Health");
  const client = new Health(`localhost:${port}`, grpc.credentials.createSsl(Buffer.from(ca), Buffer.from(key), Buffer.from(cert))) as unknown as grpc.Client & {
    check: (req: { service: string }, cb: (err: grpc.ServiceError | null) => void) => void;
  };
  const call = () => new Promise<void>((resolve, reject) => client.check({ service: "" }, (e) => (e ? reject(e) : resolve())));
  const N = 2 * PAIRS;
  const latencies: number[] = [];
  let next = 0;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => { while (next++ < 500) await call(); }));
  next = 0;
  const c0 = selfCpuUs();
  const s0 = procCpuUs(serverPid);
  const t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next++ < N) {
      const t = process.hrtime.bigint();
      await call();
      latencies.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
  }));
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const out = {
    callsPerSec: Math.round(N / seconds), p50Ms: +pct(latencies, 50).toFixed(2), p99Ms: +pct(latencies, 99).toFixed(2),
    cpuUsPerCall: { client: Math.round((selfCpuUs() - c0) / N), server: Math.round((procCpuUs(serverPid) - s0) / N) },
  };
  client.close();
  return out;
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

/** A qim-admin-server child with its diagnostics on; `diagnostics()` brackets an interval (SIGUSR2). */
async function startServer(dir: string, redisAddr: string, entry: string, role: "main" | "compare", extraArgs: readonly string[] = []): Promise<{ child: ChildProcess; port: number; diagnostics(): Promise<Record<string, unknown>>; stop(): Promise<void> }> {
  const port = await freePort();
  const nodeArgs = role === "compare" && COMPARE_NODE_ARGS ? COMPARE_NODE_ARGS : SERVER_NODE_ARGS;
  const child = spawn(process.execPath, [...nodeArgs, entry, "--listen", `127.0.0.1:${port}`, "--metrics-listen", "off",
    "--tls-ca", join(dir, "ca.pem"), "--tls-cert", join(dir, "server.pem"), "--tls-key", join(dir, "server-key.pem"),
    "--audit-log", join(dir, "audit.log"), "--redis", redisAddr, "--partitions", String(PARTITIONS), ...SERVER_ARGS, ...extraArgs],
  { stdio: ["ignore", "ignore", "pipe"], env: { ...process.env, QIM_ADMIN_DIAGNOSTICS: "1", ...(CPU_PROF ? { QIM_ADMIN_DIAGNOSTICS_PROFILE: CPU_PROF } : {}) } });
  let err = "";
  const waiting: ((line: Record<string, unknown>) => void)[] = [];
  child.stderr!.on("data", (d: Buffer) => {
    err += d.toString();
    for (let nl = err.indexOf("\n"); nl >= 0; nl = err.indexOf("\n")) {
      const line = err.slice(0, nl);
      err = err.slice(nl + 1);
      // the server's lines start with their time since issue 24 (server/log.ts)
      const m = /^(?:\S+ )?diagnostics (\{.*)$/.exec(line);
      if (m) waiting.shift()?.(JSON.parse(m[1]!) as Record<string, unknown>);
      else if (VERBOSE || !/listening on|diagnostics on|authority:/.test(line)) process.stderr.write(`[server] ${line}\n`);
      if (line.includes("listening on")) ready();
    }
  });
  let ready!: () => void;
  await new Promise<void>((resolve, reject) => {
    ready = resolve;
    child.once("exit", (code) => reject(new Error(`server exited ${code}: ${err}`)));
  });
  return {
    child, port,
    diagnostics: () => new Promise((resolve) => { waiting.push(resolve); child.kill("SIGUSR2"); }),
    stop: async () => {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    },
  };
}

interface Round {
  core: PairStats;
  coreWithRelay: PairStats;
  /** The server's engine work in this process: EngineRuntime with its relay and session projection. */
  runtime: PairStats;
  api: PairStats;
  /**
   * The same server as an API node (--cluster-units relay, docs/cluster.md "Node roles"): it
   * commits and relays, no node projects during the phase — the work the issue's limit counts.
   */
  apiNode: PairStats;
  /** apiNode against the issue's limit. */
  efficiencyApiNode: number;
  /** The issue's limit with the empty call over mTLS to the API node itself (CPU of both ends), and apiNode against it. */
  limitMtlsApiNode: number;
  efficiencyMtlsApiNode: number;
  apiNodeServer: Record<string, unknown>;
  grpcFloor: { callsPerSec: number; cpuUsPerCall: number };
  limit: number;
  efficiency: number;
  /** 1 / (core+relay+projection pair time + 2 × empty call CPU), and the API's efficiency against it. */
  limitProjection: number;
  efficiencyProjection: number;
  ratio: number;
  ratioWithRelay: number;
  server: Record<string, unknown>;
  emptyOverMtls: Awaited<ReturnType<typeof emptyOverMtls>>;
  /** The limit with the empty call over mTLS to the server instead of the in-process plaintext one. */
  limitMtls: number;
  efficiencyMtls: number;
  /** --compare: the other server build, measured in the same round. */
  compare?: { api: PairStats; efficiency: number; server: Record<string, unknown> };
}

async function main() {
  const dir = await mkdtemp(join(tmpdir(), "qim-bench-admin-"));
  const redis = await startRedis();
  const ca = createCa();
  const serverCert = issueServerCert(ca, { hosts: ["localhost", "127.0.0.1"] });
  const operator = issueClientCert(ca, { name: "bench", role: "operator" });
  for (const [name, pem] of [["ca.pem", ca.certPem], ["server.pem", serverCert.certPem], ["server-key.pem", serverCert.keyPem]] as const) {
    await writeFile(join(dir, name), pem, { mode: 0o600 });
  }

  const store = new RedisStore({ kind: "instances", addrs: [redis.addr] });
  statsClient = store.clients()[0] as import("ioredis").Redis;
  // the core phases on a key prefix of their own: the server is a node of the engine cluster and
  // leaves its relay leases under "qim" behind; a relay without a cluster (owner "", token 0) is
  // fenced out of those buckets for good, and its drain appended the same outbox again and again
  const CORE_PREFIX = "qimcore";
  const engine = new ConversationService(store, { keyPrefix: CORE_PREFIX });
  // the API phase's groups, on the server's key prefix (the server relays their commits)
  const apiEngine = new ConversationService(store);
  // a topic of its own: the server's session projection never consumes what the core phases relay
  const dispatchLog = new RedisStreamsDispatchLog(store, engine.keys, { clusterId: "qim", topicId: "bench-core", partitionCount: PARTITIONS });
  // the server also relays every event it commits into the dispatch log: the same core work with
  // an in-process relay kicked per commit (and sweeping every second, as the server's does) is the
  // like-for-like comparison; it runs only during its own phase
  let relay: OutboxRelay | undefined;
  const relayedEngine = new ConversationService(store, { keyPrefix: CORE_PREFIX, onCommit: (b) => relay?.kick(b) });
  const drain = () => new OutboxRelay(store, engine.keys, dispatchLog).drainAll();
  const tenant = randomUUID();
  const groupsFor = async (on: ConversationService = engine) => {
    const gs: string[] = [];
    for (let i = 0; i < CONCURRENCY; i++) gs.push((await on.createGroup({ tenant, owner: randomUUID(), members: Array.from({ length: 20 }, () => randomUUID()) })).group);
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
  const redisPid = { redis: redis.pid };
  // the server's engine in this process, started for its own phase and stopped after it: a key
  // prefix and dispatch topic of its own, so that neither the server nor the other phases relay
  // or project what it commits (and it none of theirs)
  const runtimePhase = async (r: number): Promise<PairStats> => {
    const runtime = new EngineRuntime({ store, keyPrefix: `qimbench${r}`, dispatch: { clusterId: "qim", topicId: "bench-runtime", partitionCount: PARTITIONS } });
    await runtime.start();
    const rtEngine = runtime.conversations;
    const rtGroups = async () => {
      const gs: string[] = [];
      for (let i = 0; i < CONCURRENCY; i++) gs.push((await rtEngine.createGroup({ tenant, owner: randomUUID(), members: Array.from({ length: 20 }, () => randomUUID()) })).group);
      return gs;
    };
    const viaRuntime = async (group: string, user: string) => {
      await rtEngine.addMembers({ tenant, group, users: [user] });
      await rtEngine.removeMembers({ tenant, group, users: [user] });
    };
    try {
      // warm-up as the server's (the projection's code paths are not warm from the other phases)
      await pairs(await rtGroups(), viaRuntime, {}, Math.min(PAIRS, 1000));
      return await pairs(await rtGroups(), viaRuntime, redisPid);
    } finally {
      await runtime.stop();
    }
  };
  const apiPhase = async (role: "main" | "compare", r: number, extraArgs: readonly string[] = []) => {
    const entry = role === "main" ? MAIN_ENTRY : COMPARE!;
    const server = await startServer(dir, redis.addr, entry, role, extraArgs);
    const client = connectAdmin({ endpoint: `localhost:${server.port}`, caPem: ca.certPem, certPem: operator.certPem, keyPem: operator.keyPem });
    const viaApi = async (group: string, user: string) => {
      await client.addMembers({ tenant, group, users: [user], dryRun: false });
      await client.removeMembers({ tenant, group, users: [user], dryRun: false });
    };
    try {
      await pairs(await groupsFor(apiEngine), viaApi, {}, Math.min(PAIRS, 1000));
      const empty = await emptyOverMtls(server.port, ca.certPem, operator.certPem, operator.keyPem, server.child.pid!);
      const groups = await groupsFor(apiEngine);
      await server.diagnostics();
      const stopProfile = CLIENT_PROF && role === "main" && extraArgs.length === 0 ? await startProfile() : undefined;
      const api = await pairs(groups, viaApi, { server: server.child.pid!, ...redisPid });
      await stopProfile?.(`${CLIENT_PROF}-round${r + 1}.cpuprofile`);
      const diag = await server.diagnostics();
      return { api, diag, empty };
    } finally {
      client.close();
      await server.stop();
    }
  };
  const rounds: Round[] = [];
  // the in-process phases are the limit's baseline: they must run with the server's young generation
  const semiSpace = { bench: semiSpaceMiB(), server: semiSpaceMiB(SERVER_NODE_ARGS, "") };
  const out: Record<string, unknown> = { pairs: PAIRS, concurrency: CONCURRENCY, rounds: ROUNDS, semiSpaceMiB: semiSpace };
  if (semiSpace.bench !== semiSpace.server) {
    process.stderr.write(`WARNING: this process runs with --max-semi-space-size=${semiSpace.bench ?? "default"}, the server with ${semiSpace.server ?? "default"}: the in-process phases (the limit) are not like-for-like; start this bench as node ${SERVER_NODE_ARGS.join(" ")} dist/bench/admin.js (npm run bench:admin does)\n`);
  }
  try {
    // warm-up of this process's core paths (JIT), then the outbox left by it relayed
    await pairs(await groupsFor(), viaCore, {}, Math.min(PAIRS, 1000));
    await drain();
    for (let r = 0; r < ROUNDS; r++) {
      // core alone: nothing else works on this Redis; its outbox is relayed afterwards, unmeasured
      const core = await pairs(await groupsFor(), viaCore, redisPid);
      await drain();

      relay = new OutboxRelay(store, engine.keys, dispatchLog);
      relay.start(1000);
      const coreWithRelay = await pairs(await groupsFor(), viaCoreRelayed, redisPid);
      await relay.stop();
      relay = undefined;

      const runtime = await runtimePhase(r);

      const floor = await grpcFloor();

      // the API with its own server process (started now: it catches up the dispatch log before
      // it listens), warmed up, then measured between two diagnostics signals; with --compare,
      // the other server build too, in alternating order
      const roles: ("main" | "compare")[] = COMPARE ? (r % 2 === 0 ? ["main", "compare"] : ["compare", "main"]) : ["main"];
      const measured = new Map<string, { api: PairStats; diag: Record<string, unknown>; empty: Awaited<ReturnType<typeof emptyOverMtls>> }>();
      for (const role of roles) measured.set(role, await apiPhase(role, r));
      const { api, diag, empty } = measured.get("main")!;
      // the API node: relays what it commits, projects nothing (no worker node runs meanwhile)
      const node = await apiPhase("main", r, ["--cluster-units", "relay"]);
      const other = measured.get("compare");
      // a pair is two calls: the API cannot beat core + relay plus two empty calls
      const pairUs = 1e6 / coreWithRelay.pairsPerSec + 2 * floor.cpuUsPerCall;
      const limit = Math.round(1e6 / pairUs);
      // the same with the empty call measured against the server itself (mTLS, another process)
      const mtlsCallUs = empty.cpuUsPerCall.client + empty.cpuUsPerCall.server;
      const limitMtls = Math.round(1e6 / (1e6 / coreWithRelay.pairsPerSec + 2 * mtlsCallUs));
      const limitMtlsNode = Math.round(1e6 / (1e6 / coreWithRelay.pairsPerSec + 2 * (node.empty.cpuUsPerCall.client + node.empty.cpuUsPerCall.server)));
      // the server also projects every event it relays: the same limit with that engine work
      const limitProjection = Math.round(1e6 / (1e6 / runtime.pairsPerSec + 2 * floor.cpuUsPerCall));
      const round: Round = {
        core, coreWithRelay, runtime, api, grpcFloor: floor, limit,
        efficiency: +(api.pairsPerSec / limit).toFixed(3),
        apiNode: node.api, efficiencyApiNode: +(node.api.pairsPerSec / limit).toFixed(3), apiNodeServer: node.diag,
        limitMtlsApiNode: limitMtlsNode, efficiencyMtlsApiNode: +(node.api.pairsPerSec / limitMtlsNode).toFixed(3),
        limitProjection,
        efficiencyProjection: +(api.pairsPerSec / limitProjection).toFixed(3),
        ratio: +(api.pairsPerSec / core.pairsPerSec).toFixed(3),
        ratioWithRelay: +(api.pairsPerSec / coreWithRelay.pairsPerSec).toFixed(3),
        server: diag,
        emptyOverMtls: empty,
        limitMtls,
        efficiencyMtls: +(api.pairsPerSec / limitMtls).toFixed(3),
        ...(other ? { compare: { api: other.api, efficiency: +(other.api.pairsPerSec / limitProjection).toFixed(3), server: other.diag } } : {}),
      };
      rounds.push(round);
      if (!args.includes("--json")) printRound(r + 1, round);
    }
  } finally {
    await store.close();
    await redis.stop();
    await rm(dir, { recursive: true, force: true });
  }
  const med = (f: (r: Round) => number) => +median(rounds.map(f)).toFixed(3);
  const summary = {
    core: { pairsPerSec: med((r) => r.core.pairsPerSec), p50Ms: med((r) => r.core.p50Ms), p99Ms: med((r) => r.core.p99Ms) },
    coreWithRelay: { pairsPerSec: med((r) => r.coreWithRelay.pairsPerSec), p50Ms: med((r) => r.coreWithRelay.p50Ms), p99Ms: med((r) => r.coreWithRelay.p99Ms) },
    runtime: { pairsPerSec: med((r) => r.runtime.pairsPerSec), p50Ms: med((r) => r.runtime.p50Ms), p99Ms: med((r) => r.runtime.p99Ms) },
    api: { pairsPerSec: med((r) => r.api.pairsPerSec), p50Ms: med((r) => r.api.p50Ms), p99Ms: med((r) => r.api.p99Ms) },
    apiNode: { pairsPerSec: med((r) => r.apiNode.pairsPerSec), p50Ms: med((r) => r.apiNode.p50Ms), p99Ms: med((r) => r.apiNode.p99Ms) },
    efficiencyApiNode: med((r) => r.efficiencyApiNode),
    limitMtlsApiNode: med((r) => r.limitMtlsApiNode),
    efficiencyMtlsApiNode: med((r) => r.efficiencyMtlsApiNode),
    apiNodeP99OverP50: med((r) => r.apiNode.p99Ms / r.apiNode.p50Ms),
    emptyCallCpuUs: med((r) => r.grpcFloor.cpuUsPerCall),
    ratio: med((r) => r.ratio),
    ratioWithRelay: med((r) => r.ratioWithRelay),
    limit: med((r) => r.limit),
    efficiency: med((r) => r.efficiency),
    limitProjection: med((r) => r.limitProjection),
    efficiencyProjection: med((r) => r.efficiencyProjection),
    p99OverP50: med((r) => r.api.p99Ms / r.api.p50Ms),
    emptyOverMtls: { p50Ms: med((r) => r.emptyOverMtls.p50Ms), cpuUsPerCall: med((r) => r.emptyOverMtls.cpuUsPerCall.client + r.emptyOverMtls.cpuUsPerCall.server) },
    limitMtls: med((r) => r.limitMtls),
    efficiencyMtls: med((r) => r.efficiencyMtls),
    ...(COMPARE ? {
      compare: {
        api: { pairsPerSec: med((r) => r.compare!.api.pairsPerSec), p50Ms: med((r) => r.compare!.api.p50Ms), p99Ms: med((r) => r.compare!.api.p99Ms) },
        efficiency: med((r) => r.compare!.efficiency),
        p99OverP50: med((r) => r.compare!.api.p99Ms / r.compare!.api.p50Ms),
      },
    } : {}),
  };
  out.rounds = rounds;
  out.summary = summary;
  if (!args.includes("--no-startup")) {
    const nodeMs = await startupMs(["-e", "0"], 10);
    const qimctlMs = await startupMs([join(ROOT, "bin/qimctl.js"), "--version"], 10);
    out.startup = { nodeMs: +nodeMs.toFixed(1), qimctlMs: +qimctlMs.toFixed(1), ratio: +(qimctlMs / nodeMs).toFixed(2) };
  }

  if (args.includes("--json")) { console.log(JSON.stringify(out, null, 2)); return; }
  const s = summary;
  console.log(`summary, median of ${ROUNDS} rounds (${CONCURRENCY} groups × 1 add+remove pair in flight, ${PAIRS} pairs a phase):`);
  console.log(`  core alone           ${String(s.core.pairsPerSec).padStart(6)} pairs/s   p50 ${s.core.p50Ms} ms   p99 ${s.core.p99Ms} ms`);
  console.log(`  core + relay         ${String(s.coreWithRelay.pairsPerSec).padStart(6)} pairs/s   p50 ${s.coreWithRelay.p50Ms} ms   p99 ${s.coreWithRelay.p99Ms} ms`);
  console.log(`  core+relay+projection ${String(s.runtime.pairsPerSec).padStart(5)} pairs/s   p50 ${s.runtime.p50Ms} ms   p99 ${s.runtime.p99Ms} ms`);
  console.log(`  admin API over mTLS  ${String(s.api.pairsPerSec).padStart(6)} pairs/s   p50 ${s.api.p50Ms} ms   p99 ${s.api.p99Ms} ms   ratio ${s.ratio} vs core, ${s.ratioWithRelay} vs core + relay`);
  console.log(`  API node (relay only) ${String(s.apiNode.pairsPerSec).padStart(5)} pairs/s   p50 ${s.apiNode.p50Ms} ms   p99 ${s.apiNode.p99Ms} ms   (--cluster-units relay: commits and relays, projects nothing)`);
  if (s.compare) console.log(`  API, --compare build ${String(s.compare.api.pairsPerSec).padStart(6)} pairs/s   p50 ${s.compare.api.p50Ms} ms   p99 ${s.compare.api.p99Ms} ms   efficiency ${s.compare.efficiency}, p99/p50 ${s.compare.p99OverP50.toFixed(2)}`);
  console.log(`  empty unary call ${s.emptyCallCpuUs} µs CPU; limit 1/(core+relay pair + 2 calls) = ${s.limit} pairs/s (the issue's formula), efficiency ${s.efficiency}`);
  console.log(`  limit with projection 1/(core+relay+projection pair + 2 calls) = ${s.limitProjection} pairs/s`);
  console.log(`  empty call over mTLS to the server ${s.emptyOverMtls.cpuUsPerCall} µs CPU (both ends), p50 ${s.emptyOverMtls.p50Ms} ms; limit with it ${s.limitMtls} pairs/s, efficiency ${s.efficiencyMtls}`);
  // each server against the limit of the engine work it does: the API node's is the issue's formula
  console.log(`  API node: efficiency vs limit ${s.efficiencyApiNode} (the issue's formula, core + relay + 2 plaintext in-process empty calls);`
    + ` vs the same limit with the empty call over mTLS to this server (${s.limitMtlsApiNode} pairs/s) ${s.efficiencyMtlsApiNode} (target ≥ 0.8) ${s.efficiencyMtlsApiNode >= 0.8 ? "MET" : "NOT MET"};`
    + ` p99/p50 ${s.apiNodeP99OverP50.toFixed(2)} (target ≤ 3) ${s.apiNodeP99OverP50 <= 3 ? "MET" : "NOT MET"}`);
  console.log(`  all-in-one server: efficiency vs limit with projection ${s.efficiencyProjection} (target ≥ 0.8) ${s.efficiencyProjection >= 0.8 ? "MET" : "NOT MET"}; vs the issue's limit ${s.efficiency};`
    + ` p99/p50 ${s.p99OverP50.toFixed(2)} (target ≤ 3) ${s.p99OverP50 <= 3 ? "MET" : "NOT MET"}`);
  if (out.startup) {
    const st = out.startup as Record<string, number>;
    console.log(`start-up: qimctl --version ${st.qimctlMs} ms vs node -e 0 ${st.nodeMs} ms = ${st.ratio}× (mean of 10)`);
  }
}

function printRound(n: number, r: Round) {
  const line = (name: string, p: PairStats) => `  ${name.padEnd(20)} ${String(p.pairsPerSec).padStart(6)} pairs/s   p50 ${p.p50Ms} ms   p99 ${p.p99Ms} ms   max ${p.maxMs} ms   CPU µs/pair ${JSON.stringify(p.cpuUsPerPair)}`;
  console.log(`round ${n}:`);
  console.log(line("core alone", r.core));
  console.log(line("core + relay", r.coreWithRelay));
  console.log(line("core+relay+projection", r.runtime));
  console.log(line("admin API over mTLS", r.api));
  console.log(line("API node (relay only)", r.apiNode));
  if (r.compare) console.log(line("API, --compare build", r.compare.api));
  if (VERBOSE) {
    const cmds = (p: PairStats) => Object.entries(p.redisPerPair ?? {}).sort((a, b) => b[1].us - a[1].us).map(([k, v]) => `${k} ${v.calls}×/${v.us}µs`).join(", ");
    console.log(`  redis per pair, core + relay: ${cmds(r.coreWithRelay)}`);
    console.log(`  redis per pair, +projection:  ${cmds(r.runtime)}`);
    console.log(`  redis per pair, admin API:    ${cmds(r.api)}`);
    if (r.compare) console.log(`  redis per pair, --compare:    ${cmds(r.compare.api)}`);
  }
  const e = r.emptyOverMtls;
  console.log(`  empty call, server   ${e.callsPerSec} calls/s over mTLS to the server   p50 ${e.p50Ms} ms   p99 ${e.p99Ms} ms   CPU µs/call ${JSON.stringify(e.cpuUsPerCall)}; limit with it ${r.limitMtls} pairs/s, efficiency ${r.efficiencyMtls}`);
  console.log(`  empty unary call     ${r.grpcFloor.callsPerSec} calls/s, ${r.grpcFloor.cpuUsPerCall} µs CPU a call; limit ${r.limit} pairs/s; efficiency ${r.efficiency}; limit with projection ${r.limitProjection}, efficiency ${r.efficiencyProjection}; ratio ${r.ratio} vs core, ${r.ratioWithRelay} vs core + relay; p99/p50 ${(r.api.p99Ms / r.api.p50Ms).toFixed(2)}`);
  const show = (name: string, d: Record<string, unknown>) => console.log(`  ${name}: ${JSON.stringify({ cpuMs: d.cpuMs, elu: d.eventLoopUtilization, loopDelayMs: d.eventLoopDelayMs, gc: d.gc, audit: d.audit, committed: d.committed, relayed: d.relayed, projected: d.projected })}`);
  show("server", r.server);
  show("API node", r.apiNodeServer);
  console.log(`  API node: efficiency ${r.efficiencyApiNode} vs the issue's limit ${r.limit}; ${r.efficiencyMtlsApiNode} vs the limit with its own mTLS empty call ${r.limitMtlsApiNode}; p99/p50 ${(r.apiNode.p99Ms / r.apiNode.p50Ms).toFixed(2)}`);
  if (r.compare) {
    console.log(`  --compare build: efficiency ${r.compare.efficiency}; p99/p50 ${(r.compare.api.p99Ms / r.compare.api.p50Ms).toFixed(2)}`);
    if (VERBOSE) show("--compare server", r.compare.server);
  }
}

main().catch((err) => { console.error(err); process.exit(1); });
