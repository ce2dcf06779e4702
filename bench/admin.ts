/**
 * bench/admin — from one run:
 *   1. membership add+remove pairs/s and pair latency p50/p99 through the admin API (a real
 *      qim-admin-server process, mTLS with an operator certificate, audit log fdatasync'd), next
 *      to the same pairs called on core directly in this process, on the same Redis (ratio;
 *      target ≥ 0.5);
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
import { connectAdmin } from "../admin-api/client.js";
import { createCa, issueClientCert, issueServerCert } from "../certs/pki.js";
import { Engine, RedisStore } from "../core/index.js";
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
  const engine = new Engine(store);
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
    const core = core1.pairsPerSec >= core2.pairsPerSec ? core2 : core1;
    const api = api1.pairsPerSec >= api2.pairsPerSec ? api2 : api1;
    out.core = core;
    out.api = api;
    out.ratio = +(api.pairsPerSec / core.pairsPerSec).toFixed(3);
  } finally {
    client.close();
    await store.close();
    child.kill("SIGTERM");
    await new Promise((r) => child.once("exit", r));
    await redis.stop();
    await rm(dir, { recursive: true, force: true });
  }
  const nodeMs = await startupMs(["-e", "0"], 10);
  const qimctlMs = await startupMs([join(ROOT, "bin/qimctl.js"), "--version"], 10);
  out.startup = { nodeMs: +nodeMs.toFixed(1), qimctlMs: +qimctlMs.toFixed(1), ratio: +(qimctlMs / nodeMs).toFixed(2) };

  if (args.includes("--json")) { console.log(JSON.stringify(out, null, 2)); return; }
  const c = out.core as Record<string, number>;
  const a = out.api as Record<string, number>;
  const s = out.startup as Record<string, number>;
  console.log(`membership add+remove pairs, ${CONCURRENCY} groups × 1 pair in flight, ${PAIRS} pairs (the slower of two runs each):`);
  console.log(`  core directly        ${String(c.pairsPerSec).padStart(6)} pairs/s   p50 ${c.p50Ms} ms   p99 ${c.p99Ms} ms`);
  console.log(`  admin API over mTLS  ${String(a.pairsPerSec).padStart(6)} pairs/s   p50 ${a.p50Ms} ms   p99 ${a.p99Ms} ms   ratio ${String(out.ratio)} (target ≥ 0.5)`);
  console.log(`start-up: qimctl --version ${s.qimctlMs} ms vs node -e 0 ${s.nodeMs} ms = ${s.ratio}× (mean of 10)`);
}

main().catch((err) => { console.error(err); process.exit(1); });
