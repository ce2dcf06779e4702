/**
 * Test harness: real redis-server processes on free loopback ports (storage is never mocked).
 *
 * Every server is a child of the current process, listens on 127.0.0.1 only, keeps its data and
 * its log (`redis.log`) in its own directory (a fresh `qim-redis-*` temp dir unless `dir` is
 * given) and is stopped by pid. A process-wide registry SIGKILLs whatever is still alive when
 * the process exits, so an aborted run leaves no redis-server behind. Nothing here ever talks
 * to a Redis it did not start (in particular not a system Redis on 6379).
 */
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { openSync, closeSync, rmSync } from "node:fs";
import { mkdtemp, mkdir, readFile, rm } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { freePort as corePort } from "../../core/support/index.js";
import type { TopologyConfig } from "../../core/index.js";

export type { TopologyConfig };

export interface RedisServer {
  host: "127.0.0.1";
  port: number;
  /** pid of the current redis-server process (changes after restart()). */
  readonly pid: number;
  dir: string;
  /** "127.0.0.1:PORT" */
  addr: string;
  /** SIGTERM, wait for exit (SIGKILL after 5 s); removes the temp dir unless `dir` was given. Idempotent. */
  stop(): Promise<void>;
  /** SIGKILL and wait for exit. Keeps the dir (for restart()). */
  kill9(): Promise<void>;
  /** Starts redis-server again on the same port and dir with the same args (stops it first if alive). */
  restart(): Promise<void>;
}

export interface StartRedisOptions {
  appendonly?: boolean;
  appendfsync?: "always" | "everysec";
  /** Data dir; created if missing and NOT removed by stop(). Default: a fresh temp dir, removed by stop(). */
  dir?: string;
  /** Appended after the harness's own args (later args win in redis-server). */
  extraArgs?: string[];
}

export interface RedisClusterHandle {
  nodes: RedisServer[];
  /** "127.0.0.1:PORT" of every master. */
  seeds: string[];
  stop(): Promise<void>;
}

export type TopologyKind = "single" | "multi" | "cluster";

export interface TestTopology {
  kind: TopologyKind;
  config: TopologyConfig;
  servers: RedisServer[];
  stop(): Promise<void>;
}

const HOST = "127.0.0.1" as const;
const START_TIMEOUT_MS = 10_000;
const STOP_GRACE_MS = 5_000;
const CLUSTER_CREATE_TIMEOUT_MS = 30_000;
const CLUSTER_READY_TIMEOUT_MS = 20_000;
const CLUSTER_BUS_OFFSET = 10_000;
const LOG_FILE = "redis.log";

const KINDS: readonly TopologyKind[] = ["single", "multi", "cluster"];

function topologiesFromEnv(): TopologyKind[] {
  const raw = process.env.QIM_TEST_TOPOLOGIES;
  if (raw === undefined || raw.trim() === "") return [...KINDS];
  const picked = raw.split(",").map((s) => s.trim()).filter((s) => s.length > 0);
  for (const k of picked) {
    if (!(KINDS as readonly string[]).includes(k)) {
      throw new Error(`QIM_TEST_TOPOLOGIES: unknown topology "${k}" (expected a comma list of ${KINDS.join(", ")})`);
    }
  }
  return KINDS.filter((k) => picked.includes(k));
}

/** Topologies the suites iterate over; narrow with QIM_TEST_TOPOLOGIES=single,cluster. */
export const ALL_TOPOLOGIES: TopologyKind[] = topologiesFromEnv();

// ---------------------------------------------------------------------------------------------
// Process-wide safety net
// ---------------------------------------------------------------------------------------------

/** Live redis-server children of this process. */
const livePids = new Set<number>();
/** Temp dirs this module created and has not removed yet. */
const ownedDirs = new Set<string>();
let safetyInstalled = false;

function killAllSync(): void {
  for (const pid of livePids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
  livePids.clear();
}

function installSafetyNet(): void {
  if (safetyInstalled) return;
  safetyInstalled = true;
  process.on("exit", () => {
    killAllSync();
    for (const dir of ownedDirs) {
      try {
        rmSync(dir, { recursive: true, force: true });
      } catch {
        // best effort
      }
    }
    ownedDirs.clear();
  });
  const onSignal = (signal: "SIGINT" | "SIGTERM", code: number) => {
    const handler = () => {
      killAllSync();
      // Registering a listener disables Node's default "terminate on signal"; restore that
      // behaviour unless someone else (e.g. the test runner) also listens and will decide.
      if (process.listenerCount(signal) <= 1) process.exit(code);
    };
    process.on(signal, handler);
  };
  onSignal("SIGINT", 130);
  onSignal("SIGTERM", 143);
}

// ---------------------------------------------------------------------------------------------
// Ports
// ---------------------------------------------------------------------------------------------

/**
 * A currently free TCP port on 127.0.0.1 (core/ports.ts). With `{ clusterBus: true }` the
 * port + 10000 (the cluster bus port) is free as well.
 */
export function freePort(opts: { clusterBus?: boolean } = {}): Promise<number> {
  return corePort(opts.clusterBus ? { alsoFree: CLUSTER_BUS_OFFSET } : {});
}

// ---------------------------------------------------------------------------------------------
// Minimal RESP over a raw socket (PING / CLUSTER INFO during start-up checks)
// ---------------------------------------------------------------------------------------------

/** Sends one command and returns the first reply as text: "+OK" / "-ERR..." as-is, bulk strings decoded. */
function rawCommand(port: number, args: string[], timeoutMs = 1_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: HOST, port });
    let buf = Buffer.alloc(0);
    const done = (err: Error | null, value?: string) => {
      clearTimeout(timer);
      sock.destroy();
      if (err) reject(err);
      else resolve(value!);
    };
    const timer = setTimeout(() => done(new Error(`timeout talking to ${HOST}:${port}`)), timeoutMs);
    sock.once("error", (e) => done(e));
    sock.once("close", () => done(new Error(`connection to ${HOST}:${port} closed`)));
    sock.on("connect", () => {
      let req = `*${args.length}\r\n`;
      for (const a of args) req += `$${Buffer.byteLength(a)}\r\n${a}\r\n`;
      sock.write(req);
    });
    sock.on("data", (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const eol = buf.indexOf("\r\n");
      if (eol < 0) return;
      const head = buf.subarray(0, eol).toString("utf8");
      if (head.startsWith("$")) {
        const len = Number(head.slice(1));
        if (len < 0) return done(null, "");
        if (buf.length < eol + 2 + len + 2) return;
        return done(null, buf.subarray(eol + 2, eol + 2 + len).toString("utf8"));
      }
      done(null, head);
    });
  });
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------
// Single server
// ---------------------------------------------------------------------------------------------

async function logTail(dir: string, lines = 30): Promise<string> {
  try {
    const text = await readFile(path.join(dir, LOG_FILE), "utf8");
    return text.split("\n").slice(-lines).join("\n").trim();
  } catch {
    return "(no log)";
  }
}

interface Running {
  child: ChildProcess;
  pid: number;
  exited: Promise<void>;
  alive: boolean;
}

class AddrInUseError extends Error {}

function spawnServer(port: number, dir: string, args: string[]): Running {
  installSafetyNet();
  const fd = openSync(path.join(dir, LOG_FILE), "a");
  let child: ChildProcess;
  try {
    child = spawn("redis-server", ["--port", String(port), ...args], {
      cwd: dir,
      stdio: ["ignore", fd, fd],
      // Same process group as the tests: a Ctrl+C in the terminal reaches redis-server too.
      detached: false,
    });
  } finally {
    closeSync(fd);
  }
  let spawnError: Error | undefined;
  child.on("error", (e) => {
    spawnError = e;
  });
  if (child.pid === undefined) {
    // spawn failed synchronously (e.g. ENOENT); the 'error' event carries the reason.
    throw new Error(`could not spawn redis-server (is it installed and on PATH?)${spawnError ? `: ${spawnError.message}` : ""}`);
  }
  const pid = child.pid;
  livePids.add(pid);
  const running: Running = { child, pid, alive: true, exited: Promise.resolve() };
  running.exited = new Promise<void>((resolve) => {
    const finish = () => {
      running.alive = false;
      livePids.delete(pid);
      child.unref();
      resolve();
    };
    child.once("exit", finish);
    child.once("error", finish);
  });
  // Do not keep the event loop alive just because a server runs: a test that forgets stop()
  // must not hang; the exit hook kills it. stop()/kill9() re-ref while they wait.
  child.unref();
  return running;
}

async function waitReady(port: number, dir: string, running: Running): Promise<void> {
  const deadline = Date.now() + START_TIMEOUT_MS;
  let last = "";
  for (;;) {
    if (!running.alive) {
      const tail = await logTail(dir);
      if (/Address already in use/i.test(tail)) throw new AddrInUseError(`port ${port} already in use`);
      throw new Error(`redis-server on port ${port} exited during start-up. Log tail (${dir}/${LOG_FILE}):\n${tail}`);
    }
    try {
      last = await rawCommand(port, ["PING"], 500);
      if (last === "+PONG") return;
    } catch (e) {
      last = (e as Error).message;
    }
    if (Date.now() > deadline) {
      await terminate(running, 0);
      const tail = await logTail(dir);
      throw new Error(
        `redis-server on port ${port} did not answer PING within ${START_TIMEOUT_MS} ms (last: ${last}). ` +
          `Log tail (${dir}/${LOG_FILE}):\n${tail}`,
      );
    }
    await sleep(50);
  }
}

/** Sends `signal`, waits up to graceMs, then SIGKILLs and waits. */
async function terminate(running: Running, graceMs: number): Promise<void> {
  if (!running.alive) return;
  running.child.ref(); // keep the loop alive while we wait for the exit event
  try {
    if (graceMs > 0) {
      try {
        process.kill(running.pid, "SIGTERM");
      } catch {
        // raced with exit
      }
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([
        running.exited.then(() => false),
        new Promise<boolean>((r) => {
          timer = setTimeout(() => r(true), graceMs);
        }),
      ]);
      clearTimeout(timer);
      if (!timedOut) return;
    }
    try {
      process.kill(running.pid, "SIGKILL");
    } catch {
      // raced with exit
    }
    await running.exited;
  } finally {
    running.child.unref();
  }
}

function serverArgs(opts: StartRedisOptions, dir: string): string[] {
  const args = [
    "--bind", HOST,
    "--save", "",
    "--appendonly", opts.appendonly ? "yes" : "no",
    "--dir", dir,
    "--daemonize", "no",
    "--protected-mode", "no",
    "--loglevel", "warning",
  ];
  if (opts.appendfsync) args.push("--appendfsync", opts.appendfsync);
  args.push(...(opts.extraArgs ?? []));
  return args;
}

/** Starts a redis-server on a free 127.0.0.1 port and waits until it answers PING. */
export async function startRedis(opts: StartRedisOptions = {}): Promise<RedisServer> {
  const ownDir = opts.dir === undefined;
  let dir: string;
  if (opts.dir !== undefined) {
    dir = path.resolve(opts.dir);
    await mkdir(dir, { recursive: true });
  } else {
    dir = await mkdtemp(path.join(os.tmpdir(), "qim-redis-"));
    ownedDirs.add(dir);
  }
  const args = serverArgs(opts, dir);
  const clusterBus = args.some((a, i) => a === "--cluster-enabled" && args[i + 1] === "yes");

  let port = 0;
  let running: Running | undefined;
  try {
    // A port probed free can be taken by someone else before redis binds it: retry a few times.
    for (let attempt = 0; ; attempt++) {
      port = await freePort({ clusterBus });
      const r = spawnServer(port, dir, args);
      try {
        await waitReady(port, dir, r);
        running = r;
        break;
      } catch (e) {
        if (e instanceof AddrInUseError && attempt < 4) continue;
        throw e;
      }
    }
  } catch (e) {
    if (ownDir) {
      await rm(dir, { recursive: true, force: true });
      ownedDirs.delete(dir);
    }
    throw e;
  }

  let current: Running = running;
  let removed = false;
  const server: RedisServer = {
    host: HOST,
    port,
    get pid() {
      return current.pid;
    },
    dir,
    addr: `${HOST}:${port}`,
    async stop() {
      await terminate(current, STOP_GRACE_MS);
      if (ownDir && !removed) {
        removed = true;
        await rm(dir, { recursive: true, force: true });
        ownedDirs.delete(dir);
      }
    },
    async kill9() {
      await terminate(current, 0);
    },
    async restart() {
      if (removed) throw new Error(`restart(): server ${HOST}:${port} was stopped and its dir removed`);
      await terminate(current, STOP_GRACE_MS);
      const r = spawnServer(port, dir, args);
      current = r;
      await waitReady(port, dir, r);
    },
  };
  return server;
}

// ---------------------------------------------------------------------------------------------
// Cluster
// ---------------------------------------------------------------------------------------------

function execFileText(file: string, args: string[], timeoutMs: number): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err) {
        reject(new Error(`${file} ${args.join(" ")} failed: ${err.message}\n${stdout}\n${stderr}`.trim()));
      } else {
        resolve({ stdout, stderr });
      }
    });
  });
}

function parseInfo(text: string): Map<string, string> {
  const m = new Map<string, string>();
  for (const line of text.split(/\r?\n/)) {
    const i = line.indexOf(":");
    if (i > 0) m.set(line.slice(0, i), line.slice(i + 1).trim());
  }
  return m;
}

async function stopAll(servers: RedisServer[]): Promise<void> {
  const results = await Promise.allSettled(servers.map((s) => s.stop()));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) throw failed.reason;
}

/** Starts `n` servers in parallel; if any fails, stops the ones that started and rethrows. */
async function startMany(n: number, opts: StartRedisOptions): Promise<RedisServer[]> {
  const results = await Promise.allSettled(Array.from({ length: n }, () => startRedis(opts)));
  const ok = results.filter((r): r is PromiseFulfilledResult<RedisServer> => r.status === "fulfilled").map((r) => r.value);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (failed) {
    await stopAll(ok).catch(() => undefined);
    throw failed.reason;
  }
  return ok;
}

/**
 * Starts `masters` cluster-enabled servers, joins them with `redis-cli --cluster create`
 * (no replicas) and waits until every node reports cluster_state:ok, all 16384 slots assigned
 * and ok, and knows all the other nodes.
 */
export async function startRedisCluster(masters = 3): Promise<RedisClusterHandle> {
  if (!Number.isInteger(masters) || masters < 3) {
    throw new Error(`startRedisCluster: redis-cli --cluster create needs at least 3 masters (got ${masters})`);
  }
  const nodes = await startMany(masters, {
    extraArgs: ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000"],
  });
  try {
    await execFileText(
      "redis-cli",
      ["--cluster", "create", ...nodes.map((n) => n.addr), "--cluster-replicas", "0", "--cluster-yes"],
      CLUSTER_CREATE_TIMEOUT_MS,
    );
    const deadline = Date.now() + CLUSTER_READY_TIMEOUT_MS;
    const pending = new Set(nodes);
    let lastState = "";
    while (pending.size > 0) {
      for (const node of [...pending]) {
        try {
          const info = parseInfo(await rawCommand(node.port, ["CLUSTER", "INFO"]));
          if (
            info.get("cluster_state") === "ok" &&
            info.get("cluster_slots_assigned") === "16384" &&
            info.get("cluster_slots_ok") === "16384" &&
            info.get("cluster_known_nodes") === String(masters)
          ) {
            pending.delete(node);
          } else {
            lastState = `${node.addr}: state=${info.get("cluster_state")} assigned=${info.get("cluster_slots_assigned")} known=${info.get("cluster_known_nodes")}`;
          }
        } catch (e) {
          lastState = `${node.addr}: ${(e as Error).message}`;
        }
      }
      if (pending.size === 0) break;
      if (Date.now() > deadline) {
        throw new Error(`cluster not ready within ${CLUSTER_READY_TIMEOUT_MS} ms (${lastState})`);
      }
      await sleep(100);
    }
  } catch (e) {
    const tails = await Promise.all(nodes.map(async (n) => `--- ${n.addr} (${n.dir}) ---\n${await logTail(n.dir, 15)}`));
    await stopAll(nodes).catch(() => undefined);
    throw new Error(`${(e as Error).message}\n${tails.join("\n")}`);
  }
  return {
    nodes,
    seeds: nodes.map((n) => n.addr),
    stop: () => stopAll(nodes),
  };
}

// ---------------------------------------------------------------------------------------------
// Topologies
// ---------------------------------------------------------------------------------------------

/**
 * "single": one standalone instance; "multi": three standalone instances (addrs in order);
 * "cluster": a 3-master Redis Cluster.
 */
export async function startTopology(kind: TopologyKind): Promise<TestTopology> {
  switch (kind) {
    case "single":
    case "multi": {
      const servers = await startMany(kind === "single" ? 1 : 3, {});
      return {
        kind,
        config: { kind: "instances", addrs: servers.map((s) => s.addr) },
        servers,
        stop: () => stopAll(servers),
      };
    }
    case "cluster": {
      const cluster = await startRedisCluster(3);
      return {
        kind,
        config: { kind: "cluster", seeds: cluster.seeds },
        servers: cluster.nodes,
        stop: () => cluster.stop(),
      };
    }
    default: {
      const never: never = kind;
      throw new Error(`unknown topology kind ${String(never)}`);
    }
  }
}
