/**
 * What the load generator drives: a private redis-server and a real qim-node process with its
 * client gateway on loopback (test/reliability/server-process.ts), a device token key set written
 * for it, an admin client, and a signer that makes device tokens in this process with the same key
 * set and claims as `qimctl token issue` (thousands of devices without thousands of admin calls).
 */
import { spawn, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import * as jose from "jose";
import { connectAdmin, type AdminClient } from "../../admin-api/client.js";
import { generateTokenKey, parseTokenKeySet, rotateTokenKeys, staticTokenKeys, TOKEN_ISSUER, TOKEN_TYPE } from "../../core/index.js";
import { writeTestPki, type TestPkiFiles } from "../../test/certs/fixture.js";
import { startRedis, type RedisServer } from "../../test/harness/redis.js";
import { startServerProcess, type ServerProcess } from "../../test/reliability/server-process.js";

/** The device tokens' lifetime here: longer than any run. */
const LOADGEN_TOKEN_TTL_S = 3600;

export interface Target {
  /** wss://localhost:PORT/… as the node logged it. */
  url: string;
  ca: Buffer;
  /** The certificates the node was started with (a baseline server may use its server certificate). */
  pki: TestPkiFiles;
  tenant: string;
  admin: AdminClient;
  node: ServerProcess;
  redis: RedisServer;
  /** A device token for (user, device) of `tenant`. */
  sign(user: string, device: string): Promise<string>;
  stop(): Promise<void>;
}

export interface TargetOptions {
  extraArgs?: string[];
  /** A one-node engine cluster (node id, node RPC listener): what writes the cross-node registries. */
  cluster?: boolean;
  /**
   * A second node process on this host, a worker: it takes the relay buckets and the dispatch
   * partitions (`--cluster-units relay,partition`; the commits' hand-offs, delivery's and the
   * list's consumers), and the devices' node keeps the user slots (`slot`), the pushes between
   * them over the node RPC. Implies `cluster`. Resolves once the worker owns its units.
   */
  worker?: boolean;
}

export async function startTarget(opts: TargetOptions = {}): Promise<Target> {
  const dir = mkdtempSync(path.join(os.tmpdir(), "qim-loadgen-"));
  const pki = await writeTestPki(path.join(dir, "pki"));
  const redis = await startRedis();
  const keysFile = path.join(dir, "token-keys.json");
  const keysText = (await rotateTokenKeys(null, await generateTokenKey("EdDSA"), keysFile)).text;
  writeFileSync(keysFile, keysText, { mode: 0o600 });
  const signer = (await staticTokenKeys(await parseTokenKeySet(keysText, keysFile)).current()).signer();
  let node: ServerProcess | undefined;
  let worker: ServerProcess | undefined;
  try {
    node = await startServerProcess({
      redisAddr: redis.addr, pki, auditLog: path.join(dir, "audit.log"), metricsListen: "127.0.0.1:0",
      // per_user_msg_rate off in effect: a bench measures the node's capacity (one device may send 64
      // in flight as fast as acks come), not what one real user is allowed
      extraArgs: ["--gateway-listen", "127.0.0.1:0", "--tokens-keys", keysFile, "--data-dir", path.join(dir, "data"), "--gateway-user-msg-rate", "1000000",
        ...(opts.cluster || opts.worker ? ["--node-id", "bench-node", "--node-listen", "127.0.0.1:0", "--node-tls-cert", pki.nodeA.certPath, "--node-tls-key", pki.nodeA.keyPath] : []),
        ...(opts.worker ? ["--cluster-units", "slot"] : []),
        ...(opts.extraArgs ?? [])],
    });
    if (opts.worker) {
      worker = await startServerProcess({
        redisAddr: redis.addr, pki, auditLog: path.join(dir, "audit-worker.log"), metricsListen: "127.0.0.1:0",
        extraArgs: ["--node-id", "bench-worker", "--cluster-units", "relay,partition", "--node-listen", "127.0.0.1:0",
          "--node-tls-cert", pki.nodeB.certPath, "--node-tls-key", pki.nodeB.keyPath, "--data-dir", path.join(dir, "data-worker")],
      });
    }
    const url = /client gateway on (wss:\/\/\S+)/.exec(await node.waitForLog(/client gateway on /))![1]!.replace("127.0.0.1", "localhost");
    const admin = connectAdmin({
      endpoint: node.endpoint, caPem: readFileSync(pki.ca.certPath, "utf8"), certPem: readFileSync(pki.admin.certPath, "utf8"),
      keyPem: readFileSync(pki.admin.keyPath, "utf8"), deadlineMs: 30_000,
    });
    if (worker) {
      try {
        await untilWorkerOwns(admin);
      } catch (err) {
        admin.close();
        throw err;
      }
    }
    const tenant = randomUUID();
    const started = node;
    const startedWorker = worker;
    return {
      url, ca: readFileSync(pki.ca.certPath), pki, tenant, admin, node, redis,
      sign: async (user, device) => {
        const now = Date.now();
        return new jose.SignJWT({ tid: tenant, dev: device, ims: now })
          .setProtectedHeader({ alg: signer.alg, kid: signer.kid, typ: TOKEN_TYPE })
          .setIssuer(TOKEN_ISSUER).setSubject(user).setJti(randomUUID())
          .setIssuedAt(Math.floor(now / 1000)).setExpirationTime(Math.floor(now / 1000) + LOADGEN_TOKEN_TTL_S)
          .sign(signer.signKey);
      },
      stop: async () => {
        admin.close();
        await startedWorker?.stop();
        await started.stop();
        await redis.stop();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await worker?.stop();
    await node?.stop();
    await redis.stop();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}

/** Waits until the worker node (TargetOptions.worker) owns relay buckets and dispatch partitions. */
async function untilWorkerOwns(admin: AdminClient): Promise<void> {
  const t0 = Date.now();
  for (;;) {
    const w = (await admin.listNodes({})).nodes.find((n) => n.nodeId === "bench-worker");
    if (w?.alive && (w.owned?.relayBuckets ?? 0) > 0 && (w.owned?.partitions ?? 0) > 0) return;
    if (Date.now() - t0 > WORKER_START_MS) throw new Error(`the worker node did not take the relay and the partitions within ${WORKER_START_MS} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** How long the worker node may take to own its units. */
const WORKER_START_MS = 30_000;

/** The resident set of a process in bytes, from /proc (VmRSS). */
export function rssBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  if (!m) throw new Error(`no VmRSS for pid ${pid}`);
  return Number(m[1]) * 1024;
}

/** This process's open-file limits (/proc/self/limits); null when unreadable. */
export function openFileLimits(): { soft: number; hard: number } | null {
  try {
    const m = /Max open files\s+(\d+|unlimited)\s+(\d+|unlimited)/.exec(readFileSync("/proc/self/limits", "utf8"));
    const n = (x: string) => (x === "unlimited" ? Infinity : Number(x));
    return m ? { soft: n(m[1]!), hard: n(m[2]!) } : null;
  } catch {
    return null;
  }
}

/** This process's soft open-file limit; null when unreadable. */
export function openFileLimit(): number | null {
  return openFileLimits()?.soft ?? null;
}

/** File descriptors a run of `devices` connections needs here (one socket each, plus head room for Redis, gRPC, logs). */
export const fdsNeeded = (devices: number) => devices + 256;

/** Throws a clear message when the open-file limit cannot hold `devices` connections (the node, a child, inherits it). */
export function assertOpenFiles(devices: number): void {
  const limit = openFileLimit();
  const need = fdsNeeded(devices);
  if (limit !== null && limit < need) {
    throw new Error(`${devices} devices need about ${need} open files in this process and in the node, but the limit is ${limit} and it was not raised here: raise the hard limit first (as root: \`ulimit -n ${need}\` in the shell that runs this, or nofile in /etc/security/limits.conf), or use fewer devices`);
  }
}

/** Set in the command relaunchForOpenFiles starts: it never relaunches twice. */
const OPEN_FILES_RAISED_ENV = "QIM_BENCH_OPEN_FILES_RAISED";

/**
 * Raises the open-file limit a run of `devices` connections needs. Node already runs with its soft
 * limit raised to the hard one, so what is left is a hard limit below the need: when this user may
 * raise it (root, or a container's default), this same command runs again under `ulimit -n` (the
 * node and the children it starts inherit the limit), and says so on stderr. Resolves with that
 * command's exit code, or null when nothing was relaunched (the limit holds already, or it cannot
 * be raised here: assertOpenFiles says what to do then).
 */
export async function relaunchForOpenFiles(devices: number): Promise<number | null> {
  const need = fdsNeeded(devices);
  const limits = openFileLimits();
  if (limits === null || limits.soft >= need || process.env[OPEN_FILES_RAISED_ENV]) return null;
  if (spawnSync("/bin/sh", ["-c", `ulimit -n ${need}`], { stdio: "ignore" }).status !== 0) return null;
  process.stderr.write(`raising the open-file limit from ${limits.soft} to ${need} for ${devices} connections (ulimit -n ${need}; the node inherits it)\n`);
  const child = spawn("/bin/sh", ["-c", `ulimit -n ${need} && exec "$0" "$@"`, process.execPath, ...process.execArgv, ...process.argv.slice(1)], {
    stdio: "inherit", env: { ...process.env, [OPEN_FILES_RAISED_ENV]: "1" },
  });
  return new Promise((resolve) => child.once("exit", (code, signal) => resolve(code ?? (signal ? 1 : 0))));
}

/**
 * What a bench's command line calls before it opens `devices` connections: relaunched under a
 * raised limit when it can be (this process then exits with the relaunched one's code), else a
 * clear error when the limit cannot hold them (assertOpenFiles).
 */
export async function ensureOpenFiles(devices: number): Promise<void> {
  const relaunched = await relaunchForOpenFiles(devices);
  if (relaunched !== null) process.exit(relaunched);
  assertOpenFiles(devices);
}
