/**
 * bench/cmd-sync-http — the server's CPU per `POST /message/sync` of the application servers' HTTP
 * API (issue 25: "the /message/sync path on a local owner is measurably cheaper"), through a real
 * qim-admin-server process (bin/qim-admin-server.js) on a private redis-server: a cluster node with
 * its node service (the default node.listen) that owns every user slot, mTLS with a service
 * certificate, keep-alive connections, the audit log written (not fdatasync'd: the figure is CPU).
 *
 * Measured, on the same server and the same connections, in ROUNDS alternating batches of BATCH:
 *   sync    syncs of CONCURRENCY users (one connection each) that each have CHANNELS unread CMD
 *           commands, never acked, so that every sync answers the same CHANNELS messages;
 *   floor   requests the HTTP API refuses with WuKongIM's 400 (`uid` empty): TLS, HTTP, the role
 *           check, the JSON body, the error mapping and the audit record — what a sync costs before
 *           any engine work — the baseline of the same run;
 * the server's CPU (utime + stime from /proc, 10 ms ticks) summed over the batches of each kind,
 * divided by their requests. With --compare OTHER/bin/qim-admin-server.js another build runs at the
 * same time on a redis-server of its own (the same users and commands), and every round measures a
 * batch of each build back to back, in alternating order: on a shared machine whose load moves by
 * the minute, both builds meet the same load, which separate runs (or whole phases one after the
 * other) do not. Wall-clock figures move between machines; the ratios of one run do not.
 * Usage: node dist/bench/cmd-sync-http.js [--rounds R] [--batch N] [--channels K] [--concurrency C] [--compare OTHER/bin/qim-admin-server.js] [--json]
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { Agent, request } from "node:https";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { connectAdmin } from "../admin-api/client.js";
import { SERVER_NODE_FLAGS } from "../server/node-flags.js";
import { issueClientCert } from "../certs/pki.js";
import { testPki, writeTestPki } from "../test/certs/fixture.js";
import { freePort, startRedis } from "../test/harness/redis.js";
import { flag } from "./args.js";

const args = process.argv.slice(2);
const option = (name: string) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
};
const JSON_ONLY = args.includes("--json");
const ROUNDS = flag("--rounds", 15);
const BATCH = flag("--batch", 200);
const CHANNELS = flag("--channels", 20);
const CONCURRENCY = flag("--concurrency", 4);
/** The syncs (and refusals) of the warm-up of each server, before anything is measured. */
const WARMUP = 500;
const COMPARE = option("--compare");
const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
const ENTRY = join(ROOT, "bin/qim-admin-server.js");
const say = (line: string) => { if (!JSON_ONLY) console.log(line); };
const r2 = (x: number) => +x.toFixed(2);

/** CPU µs a process used so far (utime + stime from /proc; clock ticks of 10 ms). */
function procCpuUs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

const dir = mkdtempSync(join(tmpdir(), "qim-bench-cmd-http-"));
const files = await writeTestPki(dir);
const pki = await testPki();
const service = issueClientCert(pki.ca, { name: "bench-app", role: "service" });
const tenant = randomUUID();
const users = Array.from({ length: CONCURRENCY }, () => randomUUID());

interface Server { child: ChildProcess; adminPort: number; syncPort: number; stop(): Promise<void> }

/** A server process, a cluster node of its own id with its node service; resolves once its HTTP API listens. */
async function startServer(entry: string, nodeId: string, redisAddr: string): Promise<Server> {
  const [listen, syncPort] = [await freePort(), await freePort()];
  const child = spawn(process.execPath, [...SERVER_NODE_FLAGS, entry, "--listen", `127.0.0.1:${listen}`, "--metrics-listen", "off",
    "--tls-ca", files.ca.certPath, "--tls-cert", files.server.certPath, "--tls-key", files.server.keyPath,
    "--audit-log", join(dir, `audit-${nodeId}.log`), "--no-audit-fsync", "--data-dir", join(dir, nodeId), "--redis", redisAddr,
    "--node-id", nodeId, "--node-tls-cert", files.nodeA.certPath, "--node-tls-key", files.nodeA.keyPath,
    "--sync-listen", `127.0.0.1:${syncPort}`, "--sync-tenant", tenant], { stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  await new Promise<void>((resolve, reject) => {
    child.stderr!.on("data", (d: Buffer) => {
      err += d.toString();
      if (err.includes("listening on")) resolve();
    });
    child.once("exit", (code) => reject(new Error(`server exited ${code}: ${err}`)));
  });
  return {
    child, adminPort: listen, syncPort,
    stop: async () => {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await exited;
    },
  };
}

/** One POST over `agent` (one keep-alive connection): status and body. */
function post(agent: Agent, port: number, path: string, body: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "localhost", port, path, method: "POST", agent, ca: pki.ca.certPem, cert: service.certPem, key: service.keyPem,
      headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c: Buffer) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

/** `n` requests over CONCURRENCY connections (connection i for user i), each answer checked. */
async function requests(agents: Agent[], port: number, n: number, kind: "sync" | "refused"): Promise<void> {
  let next = 0;
  await Promise.all(agents.map(async (agent, i) => {
    const body = kind === "sync" ? JSON.stringify({ uid: users[i], message_seq: 0, limit: 100 }) : JSON.stringify({ uid: "", limit: 100 });
    while (next < n) {
      next++;
      const a = await post(agent, port, "/message/sync", body);
      if (kind === "refused") {
        if (a.status !== 400) throw new Error(`the refused request answered ${a.status}: ${a.body}`);
        continue;
      }
      if (a.status !== 200) throw new Error(`a sync answered ${a.status}: ${a.body}`);
      const got = (JSON.parse(a.body) as unknown[]).length;
      if (got !== CHANNELS) throw new Error(`a sync answered ${got} of ${CHANNELS} commands`);
    }
  }));
}

/** One build's server on a redis-server of its own, seeded and warm: `batch` measures the server's CPU over n requests of a kind. */
async function prepare(entry: string, nodeId: string) {
  const redis = await startRedis();
  const server = await startServer(entry, nodeId, redis.addr);
  const agents = users.map(() => new Agent({ keepAlive: true, maxSockets: 1 }));
  const stop = async () => {
    for (const a of agents) a.destroy();
    await server.stop();
    await redis.stop();
  };
  try {
    // the slots are the node's once its first heartbeat took them: until then a sync answers 503
    // (and a command sent meanwhile reaches its recipient only by the owner's catch-up scan)
    for (let tries = 0; ; tries++) {
      const a = await post(agents[0]!, server.syncPort, "/message/sync", JSON.stringify({ uid: users[0], limit: 100 }));
      if (a.status === 200) break;
      if (a.status !== 503 || tries > 100) throw new Error(`the first sync answered ${a.status}: ${a.body}`);
      await new Promise((r) => setTimeout(r, 200));
    }
    const admin = connectAdmin({ endpoint: `localhost:${server.adminPort}`, caPem: pki.ca.certPem, certPem: pki.operator.certPem, keyPem: pki.operator.keyPem });
    try {
      for (const user of users) {
        for (let c = 0; c < CHANNELS; c++) {
          await admin.cmdSend({ tenant, channelId: `bench-${c}____cmd`, channelType: 1, from: "", to: [user], noPersist: false, payload: Buffer.from(`cmd ${c}`), clientMsgNo: "", redDot: true, syncOnce: false });
        }
      }
    } finally {
      admin.close();
    }
    await requests(agents, server.syncPort, WARMUP, "sync");
    await requests(agents, server.syncPort, WARMUP, "refused");
  } catch (err) {
    await stop();
    throw err;
  }
  const pid = server.child.pid!;
  const batch = async (n: number, kind: "sync" | "refused"): Promise<number> => {
    const cpu0 = procCpuUs(pid);
    await requests(agents, server.syncPort, n, kind);
    return procCpuUs(pid) - cpu0;
  };
  return { batch, stop };
}

const builds = [{ role: "main", entry: ENTRY }, ...(COMPARE ? [{ role: "compare", entry: COMPARE }] : [])];
const prepared: Awaited<ReturnType<typeof prepare>>[] = [];
try {
  for (const b of builds) prepared.push(await prepare(b.entry, `bench-${b.role}`));
  const cpu = builds.map(() => ({ sync: 0, floor: 0 }));
  for (let round = 0; round < ROUNDS; round++) {
    // each round a batch of each build back to back, the first one alternating
    const order = round % 2 === 0 ? builds.map((_, i) => i) : builds.map((_, i) => i).reverse();
    for (const i of order) {
      cpu[i]!.sync += await prepared[i]!.batch(BATCH, "sync");
      cpu[i]!.floor += await prepared[i]!.batch(BATCH, "refused");
    }
  }
  const n = ROUNDS * BATCH;
  const out = builds.map((b, i) => ({
    role: b.role, entry: b.entry, syncCpuUs: Math.round(cpu[i]!.sync / n), floorCpuUs: Math.round(cpu[i]!.floor / n), syncVsFloor: r2(cpu[i]!.sync / cpu[i]!.floor),
  }));
  const result = { rounds: ROUNDS, batch: BATCH, channels: CHANNELS, concurrency: CONCURRENCY, builds: out, ...(COMPARE ? { syncCpuVsCompare: r2(cpu[0]!.sync / cpu[1]!.sync) } : {}) };
  if (JSON_ONLY) console.log(JSON.stringify(result));
  else {
    for (const o of out) say(`${o.role} (${o.entry}): ${o.syncCpuUs} µs server CPU a sync of ${CHANNELS} commands (${o.syncVsFloor}× the ${o.floorCpuUs} µs of a refused request), ${n} of each`);
    if (COMPARE) say(`this build's CPU a sync is ${result.syncCpuVsCompare}× the compared build's`);
  }
} finally {
  for (const p of prepared) await p.stop();
  rmSync(dir, { recursive: true, force: true });
}
