/**
 * The embedded development stack (DESIGN §5): one private `redis-server` (AOF, appendfsync
 * always), a dev CA with a server and an `admin` client certificate (certs/pki.ts, as `qimctl
 * certs …`), and the admin server (`bin/qim-admin-server.js`) as detached child processes, all
 * under one data dir; a CLI context that points at it. `qimctl dev up|status|down` and
 * `qimctl demo` are thin commands over this module.
 *
 * The data dir holds:
 *
 *   dev.json       the state while the stack runs: pids, ports, paths, tenant, authority, start time
 *   dev.lock       held while a `dev up` / `dev down` works on the dir (pid inside)
 *   context.json   a qimctl context: endpoint localhost:P, ca, the admin certificate and key, the dev tenant
 *   pki/           ca.crt ca.key server.crt server.key admin.crt admin.key (keys 0600), created once;
 *                  redis.crt redis.key too once a dev up --secure-redis needed them
 *   redis/         the Redis data (appendonly dir); redis.log its log
 *   redis.password --secure-redis: the password of the ACL user qim (0600), created once
 *   redis.acl      --secure-redis: redis-server's ACL file (0600), written at each start; it
 *                  holds the password's SHA-256, not the password
 *   server.log     the admin server's stdout/stderr; audit.log its audit log
 *   node-id        the admin server's node id in the engine cluster (written by the server once: its data_dir is the audit log's)
 *   token-keys.json the device tokens' signing keys (0600, created once, as `qimctl token keygen`): every
 *                  node's client gateway verifies with them, the admin API signs with them
 *
 * Processes are recognised by their arguments, so that a reused pid is never signalled: the
 * redis-server's process title ends with "qimctl-dev <data dir>" (--proc-title-template), the
 * admin server's arguments name <data dir>/audit.log.
 */
import { SERVER_NODE_FLAGS } from "../../server/node-flags.js";
import { spawn, type ChildProcess } from "node:child_process";
import { createHash, randomBytes, randomUUID, X509Certificate } from "node:crypto";
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmdirSync, rmSync, statSync, unlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { writeCertificate } from "../certs/files.js";
import { defaultConfigPath, ENV, parseContextFile, type ConfigFile, type ContextFile, type NamedContext } from "../context.js";
import { readConfig, updateConfig } from "../context/config.js";
import { EXIT, type ExitCode } from "../exit-codes.js";
import { DRILL_REPORT_NAME, writableDir } from "../output-files.js";
import { uuid } from "../validate.js";
import {
  findOnPath, findProcesses, freePort, healthCheck, isAlive, isOurs, LOOPBACK, portIsFree, redisReadiness, redisServerVersion, sleep, stopPid,
  tcpAccepts, versionAtLeast, type Identity, type RedisReadiness, type StopHow, type TlsClientFiles,
} from "./process.js";

export const DEFAULT_DEV_DIR = path.join(".qim", "dev");
export const DEFAULT_DEMO_DIR = path.join(".qim", "demo");

/** The engine needs ZADD … GT and XTRIM MINID: Redis 6.2 or newer. */
const MIN_REDIS: readonly [number, number] = [6, 2];
const REDIS_INSTALL = "sudo apt-get install -y redis-server";
const REDIS_INSTALL_ROOT = "apt-get install -y redis-server";

/** Bounds of the waits, in attempts (each ≈ 50–100 ms plus the probe). */
const REDIS_READY_ATTEMPTS = 200;
/**
 * How long dev up waits while redis-server answers LOADING (it replays its AOF before it answers
 * anything else): a data dir that grew for weeks loads at roughly a million keys per few seconds,
 * so minutes are normal; stopping it mid-load (as the 12 s of REDIS_READY_ATTEMPTS did) only makes
 * the next try start over.
 */
const REDIS_LOADING_MAX_MS = 15 * 60_000;
/** A loading Redis is asked again this often; the "waiting … N%" line at most every LOADING_PROGRESS_EVERY_MS. */
const LOADING_POLL_MS = 250;
const LOADING_PROGRESS_EVERY_MS = 2000;
const SERVER_READY_ATTEMPTS = 300;
/** Cassandra may need to create its keyspace and table first. */
const SERVER_READY_ATTEMPTS_CASSANDRA = 1200;
/** SIGTERM → SIGKILL after this many 50 ms polls (10 s). */
const STOP_GRACE_ATTEMPTS = 200;

/** A failure of the dev stack with the exit code it deserves (cli/exit-codes.ts) and hints for people. */
export class DevStackError extends Error {
  constructor(
    readonly exitCode: ExitCode,
    readonly code: string,
    message: string,
    readonly hints: string[] = [],
  ) {
    super(message);
    this.name = "DevStackError";
  }
}

export interface DevPaths {
  dataDir: string;
  stateFile: string;
  lockFile: string;
  contextFile: string;
  pkiDir: string;
  caCert: string;
  caKey: string;
  serverCert: string;
  serverKey: string;
  adminCert: string;
  adminKey: string;
  /** The application server's certificate for the CMD sync HTTP API (CN=dev-app, OU=service). */
  serviceCert: string;
  serviceKey: string;
  redisCert: string;
  redisKey: string;
  redisDir: string;
  redisLog: string;
  redisPassword: string;
  redisAcl: string;
  serverLog: string;
  auditLog: string;
  /** The server's generated node id (core/cluster), in the data dir. */
  nodeIdFile: string;
  /** The device tokens' key set (a JWKS, 0600): tokens.keys of every node. */
  tokenKeys: string;
}

export function devPaths(dataDir: string): DevPaths {
  const d = path.resolve(dataDir);
  const pki = path.join(d, "pki");
  return {
    dataDir: d,
    stateFile: path.join(d, "dev.json"),
    lockFile: path.join(d, "dev.lock"),
    contextFile: path.join(d, "context.json"),
    pkiDir: pki,
    caCert: path.join(pki, "ca.crt"),
    caKey: path.join(pki, "ca.key"),
    serverCert: path.join(pki, "server.crt"),
    serverKey: path.join(pki, "server.key"),
    adminCert: path.join(pki, "admin.crt"),
    adminKey: path.join(pki, "admin.key"),
    serviceCert: path.join(pki, "service.crt"),
    serviceKey: path.join(pki, "service.key"),
    redisCert: path.join(pki, "redis.crt"),
    redisKey: path.join(pki, "redis.key"),
    redisDir: path.join(d, "redis"),
    redisLog: path.join(d, "redis.log"),
    redisPassword: path.join(d, "redis.password"),
    redisAcl: path.join(d, "redis.acl"),
    serverLog: path.join(d, "server.log"),
    auditLog: path.join(d, "audit.log"),
    nodeIdFile: path.join(d, "node-id"),
    tokenKeys: path.join(d, "token-keys.json"),
  };
}

/** Most servers `dev up --nodes N` starts (each is a process with its own ports, on one Redis). */
export const MAX_DEV_NODES = 9;

/** One engine server of the stack: its node id, files and node certificate. Node 1 keeps the single-server names (server.log, audit.log). */
export interface DevNodeFiles {
  index: number;
  nodeId: string;
  log: string;
  auditLog: string;
  /** Its data_dir (the server's state files). */
  dataDir: string;
  cert: string;
  key: string;
}

export function devNodeFiles(p: DevPaths, index: number): DevNodeFiles {
  const nodeId = `dev-${index}`;
  return {
    index, nodeId,
    log: index === 1 ? p.serverLog : path.join(p.dataDir, `server-${index}.log`),
    auditLog: index === 1 ? p.auditLog : path.join(p.dataDir, `audit-${index}.log`),
    dataDir: path.join(p.dataDir, `node-${index}`),
    cert: path.join(p.pkiDir, `${nodeId}.crt`),
    key: path.join(p.pkiDir, `${nodeId}.key`),
  };
}

/**
 * How the admin server (and the dev commands' probe) reach the stack's redis-server: plaintext
 * with no password, or (dev up --secure-redis) TLS only with an ACL user. Never the password.
 */
export interface DevRedisAccess {
  /** true: TLS only (no plaintext port), ACL user `user`, the default user off. */
  secure: boolean;
  /** The ACL user; null when not secure. */
  user: string | null;
  /** The TLS port (the plaintext port is off); null when not secure. */
  tlsPort: number | null;
  /** The file (mode 0600) holding the user's password; null when not secure. */
  passwordFile: string | null;
  /** The CA certificate that verifies the redis-server's certificate (the dev CA); null when not secure. */
  ca: string | null;
}

/** The state file (`<data dir>/dev.json`) and what `dev up --output json` prints (plus `status`, `notes`). */
export interface DevState {
  dataDir: string;
  /** RFC 3339: when this stack was started. */
  startedAt: string;
  /** The dev tenant, generated once per data dir and kept. */
  tenant: string;
  /** What clients connect to: localhost:P (the server certificate names localhost and 127.0.0.1). */
  endpoint: string;
  /** The conversation-set authority as the server describes it. */
  authority: string;
  authorityKind: "redis-hash" | "cassandra";
  /** `addr` is what the admin server is given: 127.0.0.1:P, or rediss://127.0.0.1:P when secure. */
  redis: { pid: number; port: number; addr: string; version: string; dataDir: string; log: string };
  redisAccess: DevRedisAccess;
  server: { pid: number; port: number; listen: string; metricsPort: number; metricsUrl: string; log: string; auditLog: string };
  /** Every engine server of the stack (dev up --nodes N), node 1 first; `server` is node 1. */
  nodes: DevNodeState[];
  pki: { dir: string; ca: string; cert: string; key: string };
  /**
   * The CMD sync HTTP API of node 1 (POST /message/sync, /message/syncack): https://127.0.0.1:P, over
   * TLS with the dev CA; only the service certificate (`service`: CN=dev-app, OU=service) may call it.
   * Every node serves it on its own port (`nodes[].syncUrl`); any of them serves every user (a
   * user's sync is routed to the owner of the user's slot). Absent in the state of a stack started
   * before it existed.
   */
  syncUrl?: string;
  service?: { cert: string; key: string };
  /**
   * The client gateway of node 1 (wss://localhost:P, the server certificate; devices carry a token
   * from \`qimctl token issue\`, no certificate). Every node serves one on its own port
   * (\`nodes[].gatewayUrl\`). Absent in the state of a stack started before it existed.
   */
  gatewayUrl?: string;
  /** The context file in the data dir. */
  context: string;
  /** The named context dev up keeps for this stack in the config file (dev, dev-<data dir name>, demo for the demo; -2 … when another stack holds the name). */
  namedContext: NamedContextPlan;
}

export interface DevNodeState {
  nodeId: string;
  pid: number;
  /** Its admin API port (each node serves the admin API; the context points at node 1). */
  port: number;
  metricsPort: number;
  metricsUrl: string;
  log: string;
  auditLog: string;
  /** Its CMD sync HTTP API, https://127.0.0.1:P (absent in the state of a stack whose nodes 2… had none). */
  syncUrl?: string;
  /** Its client gateway, wss://localhost:P (absent in the state of a stack started before it existed). */
  gatewayUrl?: string;
  /** The kinds of units it takes (cluster.units; absent in a state written before --cluster-units: all three). */
  units?: UnitKind[];
}

/** The kinds of cluster units a node may take (the server's cluster.units, docs/cluster.md "Node roles"). */
export const UNIT_KINDS = ["relay", "partition", "slot", "room"] as const;
export type UnitKind = (typeof UNIT_KINDS)[number];

/**
 * Each node's units from --cluster-units `N=KINDS` entries (KINDS: a comma list of relay,
 * partition, slot); a node without an entry takes all three. Refused (exit 2, nothing started):
 * a node number outside 1..nodes, a node named twice, an unknown or repeated kind, and a stack in
 * which some kind is taken by no node (its work would never be done).
 */
export function parseClusterUnits(specs: readonly string[], nodes: number): UnitKind[][] {
  const out: UnitKind[][] = Array.from({ length: nodes }, () => [...UNIT_KINDS]);
  const named = new Set<number>();
  const refuse = (why: string) => {
    throw new DevStackError(EXIT.USAGE, "INVALID_CLUSTER_UNITS", `--cluster-units: ${why}`);
  };
  for (const spec of specs) {
    const m = /^\s*(\d{1,3})\s*=\s*([a-z, ]*)$/.exec(spec);
    if (!m) refuse(`expected N=KINDS (e.g. 1=relay or 2=partition,slot), got ${JSON.stringify(spec.slice(0, 60))}`);
    const n = Number(m![1]);
    if (n < 1 || n > nodes) refuse(`node ${n} is not one of the stack's nodes 1 to ${nodes} (--nodes ${nodes})`);
    if (named.has(n)) refuse(`node ${n} is named twice`);
    named.add(n);
    const kinds = m![2]!.split(",").map((k) => k.trim()).filter((k) => k !== "");
    if (kinds.length === 0) refuse(`node ${n} takes no kind of unit; name at least one of ${UNIT_KINDS.join(", ")}`);
    for (const k of kinds) if (!(UNIT_KINDS as readonly string[]).includes(k)) refuse(`unknown kind ${JSON.stringify(k.slice(0, 30))} for node ${n}; the kinds are ${UNIT_KINDS.join(", ")}`);
    if (new Set(kinds).size !== kinds.length) refuse(`node ${n} names a kind twice`);
    out[n - 1] = UNIT_KINDS.filter((k) => kinds.includes(k));
  }
  const untaken = UNIT_KINDS.filter((k) => !out.some((u) => u.includes(k)));
  if (untaken.length > 0) refuse(`no node takes ${untaken.join(", ")}: every kind needs a node (a node without an entry takes all three)`);
  return out;
}

/** The named context of a dev stack: whether dev up wrote it, and which context is current after it. */
export interface NamedContextPlan {
  /** The config file ($XDG_CONFIG_HOME/qimctl/config.json). */
  config: string;
  name: string;
  written: boolean;
  /** The current context after dev up (it makes its own current only when none was). */
  current: string | null;
  note: string | null;
}

export interface DevUpResult extends DevState {
  /** `started`: processes were started now; `reused`: they were running and answering already. */
  status: "started" | "reused";
  /** What dev up found and did besides starting (stale state cleaned up, certificates created, …). */
  notes: string[];
}

export interface DevUpOptions {
  dataDir: string;
  /** The admin API port; default a free loopback port (the previous one when still free). */
  port?: number;
  /** A production-like Redis: TLS only, ACL user qim with a random password, the default user off. */
  secureRedis?: boolean;
  /** Engine servers to start on the stack's Redis, each a node of one cluster (default 1). */
  nodes?: number;
  /**
   * `N=KINDS` per node whose units are not all three (--cluster-units): `1=relay` makes dev-1 an
   * API node (it relays commits and leaves projecting to the others). A node without an entry
   * takes every kind. Every kind must be taken by some node.
   */
  clusterUnits?: string[];
  env?: NodeJS.ProcessEnv;
  home?: string;
  /** The base name of this stack's context in the config file (default: baseContextName), demo for the demo. */
  contextName?: string;
  /** Progress lines for people (stderr in table mode). */
  progress?: (line: string) => void;
}

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
const ADMIN_SERVER_BIN = path.join(root, "bin", "qim-admin-server.js");

// ---------------------------------------------------------------------------------------------
// Identities, state, lock
// ---------------------------------------------------------------------------------------------

const REDIS_TITLE_MARK = "qimctl-dev";

/** The redis-server of this data dir: its title (or, before it set it, its last argument) ends with the mark. */
export function redisIdentity(p: DevPaths): Identity {
  const mark = `${REDIS_TITLE_MARK} ${p.dataDir}`;
  return (argv) => argv.join(" ").includes("redis-server") && argv.join(" ").trimEnd().endsWith(mark);
}

/** An admin server of this data dir: qim-admin-server with --audit-log <data dir>/audit.log (node 1) or <data dir>/audit-N.log. */
export function serverIdentity(p: DevPaths): Identity {
  return (argv) => argv.some((a) => a.endsWith("qim-admin-server.js"))
    && argv.some((a) => a === p.auditLog || (path.dirname(a) === p.dataDir && /^audit-\d+\.log$/.test(path.basename(a))));
}

/** Every process of this data dir's stack that is running, state file or not (one pass over /proc). */
function stackProcesses(p: DevPaths): { redis: number[]; server: number[] } {
  return findProcesses({ redis: redisIdentity(p), server: serverIdentity(p) });
}

function readState(p: DevPaths): DevState | null {
  let text: string;
  try {
    text = readFileSync(p.stateFile, "utf8");
  } catch {
    return null;
  }
  try {
    const s = JSON.parse(text) as DevState;
    if (typeof s?.redis?.pid !== "number" || typeof s?.server?.pid !== "number") return null;
    // written before --secure-redis existed: a plaintext Redis
    return s.redisAccess ? s : { ...s, redisAccess: PLAIN_REDIS };
  } catch {
    return null;
  }
}

/** Writes a file only its owner may read, atomically: never a moment with a looser mode or half a file. */
function writePrivate(file: string, text: string): void {
  const tmp = `${file}.${process.pid}.tmp`;
  rmSync(tmp, { force: true });
  writeFileSync(tmp, text, { mode: 0o600, flag: "wx" });
  renameSync(tmp, file);
}

function writeJson(file: string, value: unknown, mode = 0o644): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(value, null, 2)}\n`, { mode });
  // rename is atomic: a reader never sees half a file
  renameSync(tmp, file);
}

/** Takes `<data dir>/dev.lock` (a stale one, whose pid is gone, is taken over); returns the release. */
function lock(p: DevPaths): () => void {
  mkdirSync(p.dataDir, { recursive: true });
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fd = openSync(p.lockFile, "wx", 0o644);
      writeFileSync(fd, String(process.pid));
      closeSync(fd);
      return () => {
        try {
          if (readFileSync(p.lockFile, "utf8").trim() === String(process.pid)) unlinkSync(p.lockFile);
        } catch {
          // already gone
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const holder = Number(readFileSafe(p.lockFile).trim());
      // a live qimctl holds it (a pid reused by another program does not)
      if (holder !== process.pid && isOurs(holder, (argv) => argv.some((a) => a.includes("qimctl")))) {
        throw new DevStackError(EXIT.CONFLICT, "DEV_STACK_BUSY", `another qimctl (pid ${holder}) is starting or stopping the dev stack in ${p.dataDir}; try again when it has finished`);
      }
      rmSync(p.lockFile, { force: true });
    }
  }
  throw new DevStackError(EXIT.CONFLICT, "DEV_STACK_BUSY", `cannot take ${p.lockFile}`);
}

function readFileSafe(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
}

/** The last `lines` lines of `file` from byte `from` on. */
export function logTail(file: string, from = 0, lines = 30): string {
  try {
    const size = statSync(file).size;
    const start = Math.max(from, size - 64 * 1024);
    const fd = openSync(file, "r");
    try {
      const buf = Buffer.alloc(size - start);
      readSync(fd, buf, 0, buf.length, start);
      return buf.toString("utf8").trimEnd().split("\n").slice(-lines).join("\n");
    } finally {
      closeSync(fd);
    }
  } catch {
    return "(no log)";
  }
}

// ---------------------------------------------------------------------------------------------
// Processes we start: tracked until the state is written, so that a failure or Ctrl+C stops them
// ---------------------------------------------------------------------------------------------

const starting = new Set<number>();

/** SIGKILLs what the current `dev up` started and has not handed over yet; returns their pids. */
function killStartingSync(): number[] {
  const killed = [...starting];
  for (const pid of killed) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // gone
    }
  }
  starting.clear();
  return killed;
}

/**
 * Ctrl+C during `dev up` or `demo`: kill what devUp started and has not handed over to the state
 * file yet, so that nothing is left half-started, and exit 130. A stack already handed over keeps
 * running (`dev down` owns it).
 */
export function stopStartingOnInterrupt(): void {
  process.once("SIGINT", () => {
    const killed = killStartingSync();
    process.stderr.write(killed.length > 0 ? `interrupted: stopped what was starting (pid ${killed.join(", ")})\n` : "interrupted\n");
    process.exit(130);
  });
}

interface Started {
  child: ChildProcess;
  pid: number;
  /** Set once it exited (code or signal). */
  exited: () => boolean;
}

async function spawnDetached(command: string, args: string[], cwd: string, logFile: string, env: NodeJS.ProcessEnv): Promise<Started> {
  const fd = openSync(logFile, "a");
  let child: ChildProcess;
  try {
    // detached: its own process group, so that a Ctrl+C in the terminal that ran `dev up` later
    // does not reach it; stdio to the log file only, so that nothing ties it to this process
    child = spawn(command, args, { cwd, env, detached: true, stdio: ["ignore", fd, fd] });
  } finally {
    closeSync(fd);
  }
  let done = false;
  child.on("error", () => {
    done = true;
  });
  child.on("exit", () => {
    done = true;
  });
  if (child.pid === undefined) {
    // why (ENOENT, EACCES) arrives as an 'error' event after spawn() has returned
    const err = await new Promise<Error>((resolve) => child.once("error", resolve));
    throw new DevStackError(EXIT.INTERNAL, "SPAWN_FAILED", `cannot start ${command}: ${err.message}`);
  }
  starting.add(child.pid);
  child.unref();
  return { child, pid: child.pid, exited: () => done || child.exitCode !== null || child.signalCode !== null };
}

async function stopStarted(s: Started | undefined): Promise<void> {
  if (!s) return;
  starting.delete(s.pid);
  if (!s.exited()) await stopPid(s.pid, STOP_GRACE_ATTEMPTS).catch(() => undefined);
}

// ---------------------------------------------------------------------------------------------
// redis-server
// ---------------------------------------------------------------------------------------------

/** Where redis-server is and which version; a DevStackError (exit 2, the install command) when it is missing or too old. */
async function requireRedisServer(env: NodeJS.ProcessEnv = process.env): Promise<{ binary: string; version: string }> {
  const binary = findOnPath("redis-server", env);
  const install = `install it with: ${REDIS_INSTALL} (or, as root: ${REDIS_INSTALL_ROOT})`;
  if (!binary) {
    throw new DevStackError(EXIT.USAGE, "REDIS_SERVER_MISSING", `redis-server is not installed (not found on PATH); ${install}`, [
      "the dev stack runs its own private redis-server on a free loopback port; it never uses a system Redis on 6379",
    ]);
  }
  const version = await redisServerVersion(binary);
  if (version !== null && !versionAtLeast(version, MIN_REDIS)) {
    throw new DevStackError(EXIT.USAGE, "REDIS_SERVER_TOO_OLD", `${binary} is Redis ${version}; the engine needs Redis ${MIN_REDIS.join(".")} or newer (ZADD GT, XTRIM MINID); ${install}`);
  }
  return { binary, version: version ?? "unknown" };
}

async function startRedis(p: DevPaths, binary: string, env: NodeJS.ProcessEnv, secure: boolean, progress: (line: string) => void): Promise<{ started: Started; port: number }> {
  mkdirSync(p.redisDir, { recursive: true });
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const from = sizeOf(p.redisLog);
    const listen = secure
      ? [
        "--port", "0",
        "--tls-port", String(port),
        "--tls-cert-file", p.redisCert,
        "--tls-key-file", p.redisKey,
        "--tls-ca-cert-file", p.caCert,
        // clients prove who they are by the ACL user's password, not by a certificate
        "--tls-auth-clients", "no",
        // the users from a file: redis-server's arguments show in ps and /proc/<pid>/cmdline
        "--aclfile", p.redisAcl,
      ]
      : ["--port", String(port)];
    const started = await spawnDetached(binary, [
      ...listen,
      "--bind", LOOPBACK,
      "--dir", p.redisDir,
      "--appendonly", "yes",
      "--appendfsync", "always",
      "--save", "",
      "--daemonize", "no",
      "--loglevel", "notice",
      // last, so that the arguments end with the mark before redis sets its title
      "--proc-title-template", `{title} {listen-addr} ${REDIS_TITLE_MARK} ${p.dataDir}`,
    ], p.redisDir, p.redisLog, env);
    let loadingSince: number | null = null;
    let said = 0;
    let loadingTooLong = false;
    // attempts count only while Redis does not answer at all: loading a big AOF is progress
    for (let i = 0; i < REDIS_READY_ATTEMPTS;) {
      if (started.exited()) break;
      const st = await redisState(port, redisAccess(p, secure, port));
      if (st.state === "ready") return { started, port };
      if (st.state === "loading") {
        const now = Date.now();
        loadingSince ??= now;
        if (now - loadingSince > REDIS_LOADING_MAX_MS) {
          loadingTooLong = true;
          break;
        }
        if (now - said >= LOADING_PROGRESS_EVERY_MS) {
          said = now;
          progress(`waiting for Redis to load its data (${st.percent === null ? "progress unknown" : `${st.percent.toFixed(0)}% loaded`}, ${Math.round((now - loadingSince) / 1000)} s so far; ${p.redisLog})`);
        }
        await sleep(LOADING_POLL_MS);
        continue;
      }
      i++;
      await sleep(50);
    }
    const exited = started.exited();
    await stopStarted(started);
    const tail = logTail(p.redisLog, from);
    if (exited && /Address already in use/i.test(tail) && attempt < 3) continue;
    if (loadingTooLong) {
      throw new DevStackError(EXIT.CONNECTION, "REDIS_START_FAILED", `redis-server was still loading its data after ${REDIS_LOADING_MAX_MS / 60_000} minutes; it is stopped again. The end of ${p.redisLog}:\n${indent(tail)}`);
    }
    const noTls = secure && exited && /tls/i.test(tail) ? " (--secure-redis needs a redis-server built with TLS support)" : "";
    throw new DevStackError(exited ? EXIT.INTERNAL : EXIT.CONNECTION, "REDIS_START_FAILED",
      `redis-server ${exited ? "exited during start-up" : `did not answer PING on ${secure ? `rediss://${LOOPBACK}:${port} as user ${SECURE_REDIS_USER}` : `${LOOPBACK}:${port}`}`}${noTls}; the end of ${p.redisLog}:\n${indent(tail)}`);
  }
}

function sizeOf(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0;
  }
}

const indent = (text: string) => text.replace(/^/gm, "    ");

// ---------------------------------------------------------------------------------------------
// A production-like Redis (dev up --secure-redis)
// ---------------------------------------------------------------------------------------------

/** The ACL user the admin server connects as when the stack's Redis is secure. */
export const SECURE_REDIS_USER = "qim";

const PLAIN_REDIS: DevRedisAccess = { secure: false, user: null, tlsPort: null, passwordFile: null, ca: null };

function redisAccess(p: DevPaths, secure: boolean, port: number): DevRedisAccess {
  return secure ? { secure: true, user: SECURE_REDIS_USER, tlsPort: port, passwordFile: p.redisPassword, ca: p.caCert } : PLAIN_REDIS;
}

/**
 * The password in a password file as the admin server reads it (one trailing newline dropped);
 * null when the file is missing or holds no password of printable characters without spaces.
 */
function readRedisPassword(file: string): string | null {
  const text = readFileSafe(file).replace(/\r?\n$/, "");
  return /^[\x21-\x7e]+$/.test(text) ? text : null;
}

/**
 * The password of the ACL user: created once per data dir (32 random bytes, base64url) in
 * <data dir>/redis.password, mode 0600, and kept like the PKI, so that a restart keeps it and a
 * redis-cli set up with it goes on working.
 */
function ensureRedisPassword(p: DevPaths): { password: string; created: boolean } {
  const kept = readRedisPassword(p.redisPassword);
  if (kept !== null) {
    if ((statSync(p.redisPassword).mode & 0o077) !== 0) chmodSync(p.redisPassword, 0o600);
    return { password: kept, created: false };
  }
  mkdirSync(p.dataDir, { recursive: true });
  const password = randomBytes(32).toString("base64url");
  writePrivate(p.redisPassword, password);
  return { password, created: true };
}

/**
 * redis-server's ACL file: user qim with every command, key and channel, the default user off
 * (no unauthenticated access). It names the password by its SHA-256 (`#<hex>`), so that no file
 * but redis.password holds the password text.
 *
 * The default user is off but keeps its permissions (`~* &* +@all`): Redis replays the AOF as
 * the default user and, before redis/redis#14545, re-checks its ACL at each EXEC, so with
 * `user default off` alone (which means -@all) every MULTI/EXEC in the AOF — the effects of every
 * Lua script — is dropped on restart without an error to any client (seen on 7.0.15). An off user
 * cannot log in, so the permissions give no one access.
 */
function writeRedisAcl(p: DevPaths, password: string): void {
  const hash = createHash("sha256").update(password).digest("hex");
  writePrivate(p.redisAcl, `user ${SECURE_REDIS_USER} on #${hash} ~* &* +@all\nuser default off ~* &* +@all\n`);
}

/** Whether the stack's Redis answers PING: plaintext, or over TLS after AUTH with the password file. */
async function redisUp(port: number, access: DevRedisAccess): Promise<boolean> {
  return (await redisState(port, access)).state === "ready";
}

/** Where the stack's Redis is (ready, loading its data, down): plaintext, or over TLS after AUTH with the password file. */
async function redisState(port: number, access: DevRedisAccess): Promise<RedisReadiness> {
  if (!access.secure) return redisReadiness(port);
  const password = readRedisPassword(access.passwordFile ?? "");
  if (password === null || access.ca === null || access.user === null) return { state: "down" };
  let caPem: Buffer;
  try {
    caPem = readFileSync(access.ca);
  } catch {
    return { state: "down" };
  }
  return redisReadiness(port, { caPem, user: access.user, password });
}

/** The admin server's Redis flags for this stack; the password only by its file. */
function serverRedisArgs(access: DevRedisAccess, port: number): string[] {
  if (!access.secure) return ["--redis", `${LOOPBACK}:${port}`];
  return ["--redis", `rediss://${LOOPBACK}:${port}`, "--redis-user", access.user!, "--redis-password-file", access.passwordFile!, "--redis-tls-ca", access.ca!];
}

/**
 * The admin server's environment: the caller's, without its QIM_* settings other than
 * QIM_CASSANDRA_* (dev up gives every other setting itself as a flag; a QIM_REDIS_PASSWORD beside
 * --redis-password-file would refuse start-up, a QIM_REDIS_TLS_CERT add a client certificate).
 */
function serverEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([k]) => !ignoredServerVariable(k)));
}

/**
 * A QIM_* variable of the caller's that the stack's servers do not get: dev up gives them every
 * setting it means as flags, and passes on only the Cassandra authority's (QIM_CASSANDRA_*, how a
 * dev stack is pointed at Cassandra). A QIM_REDIS_ADDRS or QIM_DISPATCH_PARTITIONS left in a shell
 * for a production server would otherwise change the dev stack behind its flags.
 */
function ignoredServerVariable(key: string): boolean {
  return key.startsWith("QIM_") && !key.startsWith("QIM_CASSANDRA_");
}

// ---------------------------------------------------------------------------------------------
// PKI
// ---------------------------------------------------------------------------------------------

/** A certificate file that exists, is valid for at least another day and (unless it is the CA) was signed by the CA. */
function usable(certFile: string, keyFile: string, caFile?: string): boolean {
  try {
    if (!existsSync(keyFile)) return false;
    const cert = new X509Certificate(readFileSync(certFile));
    if (new Date(cert.validTo).getTime() < Date.now() + 24 * 3600_000) return false;
    return caFile === undefined || cert.verify(new X509Certificate(readFileSync(caFile)).publicKey);
  } catch {
    return false;
  }
}

/**
 * Creates the dev CA, the server certificate (localhost, 127.0.0.1) and the admin client
 * certificate once (and, for --secure-redis, redis-server's own certificate for the same names);
 * later runs keep them, and replace only what is missing, about to expire, or not signed by the CA.
 */
async function ensurePki(p: DevPaths, opts: { redis: boolean; nodes: number }): Promise<{ created: string[] }> {
  const caOk = usable(p.caCert, p.caKey);
  const serverOk = caOk && usable(p.serverCert, p.serverKey, p.caCert);
  const adminOk = caOk && usable(p.adminCert, p.adminKey, p.caCert);
  const serviceOk = caOk && usable(p.serviceCert, p.serviceKey, p.caCert);
  const redisOk = !opts.redis || (caOk && usable(p.redisCert, p.redisKey, p.caCert));
  const nodes = Array.from({ length: opts.nodes }, (_, i) => devNodeFiles(p, i + 1));
  const nodesMissing = nodes.filter((n) => !caOk || !usable(n.cert, n.key, p.caCert));
  if (caOk && serverOk && adminOk && serviceOk && redisOk && nodesMissing.length === 0) return { created: [] };
  const { createCa, issueClientCert, issueNodeCert, issueServerCert } = await import("../../certs/pki.js");
  const created: string[] = [];
  let ca: { certPem: string; keyPem: string };
  // what is not usable is replaced: written over, as `qimctl certs … --force` does
  if (!caOk) {
    ca = createCa({ commonName: "qimctl dev CA" });
    await writeCertificate(ca, p.caCert, p.caKey, null, true);
    created.push("dev CA");
  } else {
    ca = { certPem: readFileSync(p.caCert, "utf8"), keyPem: readFileSync(p.caKey, "utf8") };
  }
  if (!serverOk) {
    await writeCertificate(issueServerCert(ca, { hosts: ["localhost", "127.0.0.1"] }), p.serverCert, p.serverKey, null, true);
    created.push("server certificate (localhost, 127.0.0.1)");
  }
  if (!adminOk) {
    await writeCertificate(issueClientCert(ca, { name: "dev-admin", role: "admin" }), p.adminCert, p.adminKey, "admin", true);
    created.push("admin client certificate (CN=dev-admin, OU=admin)");
  }
  if (!serviceOk) {
    await writeCertificate(issueClientCert(ca, { name: "dev-app", role: "service" }), p.serviceCert, p.serviceKey, "service", true);
    created.push("service client certificate for the CMD sync HTTP API (CN=dev-app, OU=service)");
  }
  if (!redisOk) {
    await writeCertificate(issueServerCert(ca, { hosts: ["localhost", "127.0.0.1"] }), p.redisCert, p.redisKey, null, true);
    created.push("Redis server certificate (localhost, 127.0.0.1)");
  }
  for (const n of nodesMissing) {
    await writeCertificate(issueNodeCert(ca, { nodeId: n.nodeId, hosts: ["localhost", "127.0.0.1"] }), n.cert, n.key, "node", true);
    created.push(`node certificate of ${n.nodeId} (CN=${n.nodeId}, OU=node)`);
  }
  return { created };
}

/** The stack's device token keys (one Ed25519 key, as `qimctl token keygen`), made once per data dir; true when made now. A file that is there is the operator's (perhaps rotated): kept as it is. */
async function ensureTokenKeys(p: DevPaths): Promise<boolean> {
  if (existsSync(p.tokenKeys)) return false;
  const { generateTokenKey, rotateTokenKeys } = await import("../../core/tokens/index.js");
  const r = await rotateTokenKeys(null, await generateTokenKey("EdDSA"), p.tokenKeys);
  writePrivate(p.tokenKeys, r.text);
  return true;
}

function adminTls(p: DevPaths): TlsClientFiles {
  return { caPem: readFileSync(p.caCert), certPem: readFileSync(p.adminCert), keyPem: readFileSync(p.adminKey) };
}

// ---------------------------------------------------------------------------------------------
// Context files
// ---------------------------------------------------------------------------------------------

/** The dev tenant of this data dir: the one its context file names (read as any command reads it), else a new one. */
function devTenant(p: DevPaths): string {
  try {
    const { tenant } = parseContextFile(readFileSync(p.contextFile, "utf8"), p.contextFile);
    return uuid("tenant", tenant);
  } catch {
    // none yet, or not a context file with a tenant UUID
    return randomUUID();
  }
}

/** The context a dev stack writes: what cli/context.ts reads, every field set, plus the `dev` mark and the data dir. */
interface DevContextFile extends Required<Omit<ContextFile, "gateway">>, Pick<ContextFile, "gateway"> {
  insecure: false;
  dev: true;
  dataDir: string;
}

function devContext(p: DevPaths, endpoint: string, tenant: string, gateway: string | undefined): DevContextFile {
  return { endpoint, ca: p.caCert, cert: p.adminCert, key: p.adminKey, tenant, ...(gateway ? { gateway } : {}), insecure: false, dev: true, dataDir: p.dataDir };
}

/** Whether a named context is the one dev up wrote for this data dir. */
export function contextIsOurs(c: NamedContext | undefined, p: DevPaths): boolean {
  return c?.dev === true && typeof c.dataDir === "string" && path.resolve(c.dataDir) === p.dataDir;
}

/** Names tried after the base name when another dev stack holds it: base-2 … base-MAX. */
const MAX_CONTEXT_SUFFIX = 9;

/**
 * The base name of a stack's named context: `dev` for a data dir named dev (the default .qim/dev,
 * in any working directory), else `dev-<name of the data dir>` (.qim/dev2 → dev-dev2), so that a
 * second stack never needs the first one's name; a caller's own base (the demo's `demo`) as given.
 */
export function baseContextName(p: DevPaths, given?: string): string {
  if (given !== undefined) return given;
  if (path.basename(p.dataDir) === path.basename(DEFAULT_DEV_DIR)) return "dev";
  // the characters a context name allows (cli/context.ts), at most its 64
  const slug = path.basename(p.dataDir).replace(/[^A-Za-z0-9._@-]/g, "-").replace(/\.json$/, "-json").slice(0, 64 - "dev-".length - `-${MAX_CONTEXT_SUFFIX}`.length);
  return slug === "" ? "dev" : `dev-${slug}`;
}

/**
 * Chooses and writes this stack's named context into `cfg`. Its own context (one dev up wrote for
 * this data dir) keeps its name. Otherwise the base name, unless another dev stack's context holds
 * it: then base-2, base-3 … (another stack's context is never overwritten, up or down; only one
 * whose data dir is gone altogether is taken over). A context of the base name written otherwise
 * (`qimctl context set`) is left alone and none is written. The context becomes current only when
 * no context is. Returns the name and the note for people, if any.
 */
export function planNamedContext(cfg: ConfigFile, base: string, ctx: NamedContext, p: DevPaths): { name: string; written: boolean; note: string | null } {
  const candidates = [base, ...Array.from({ length: MAX_CONTEXT_SUFFIX - 1 }, (_, i) => `${base}-${i + 2}`)];
  const at = (n: string) => (Object.hasOwn(cfg.contexts, n) ? cfg.contexts[n] : undefined);
  const write = (name: string, note: string | null) => {
    cfg.contexts[name] = ctx;
    cfg.current ??= name;
    return { name, written: true, note };
  };
  const own = candidates.find((n) => contextIsOurs(at(n), p));
  if (own !== undefined) return write(own, null);
  const existing = at(base);
  if (existing && (existing.dev !== true || typeof existing.dataDir !== "string")) {
    return { name: base, written: false, note: `the context "${base}" exists and was not written by qimctl dev up: left as it is` };
  }
  for (const name of candidates) {
    const c = at(name);
    if (!c) return write(name, name === base ? null : `the context "${base}" belongs to the dev stack in ${path.resolve(existing!.dataDir!)}: this stack's context is "${name}"`);
    // a dev stack whose data dir is gone (removed by hand) cannot be reached any more: its context is stale
    if (c.dev === true && typeof c.dataDir === "string" && !existsSync(path.resolve(c.dataDir))) {
      return write(name, `the context "${name}" pointed at the dev stack in ${path.resolve(c.dataDir)}, whose data dir is gone: it points at this one now`);
    }
  }
  return { name: base, written: false, note: `the contexts ${candidates[0]} … ${candidates.at(-1)} all belong to other dev stacks: none written` };
}

function writeContexts(p: DevPaths, endpoint: string, tenant: string, gateway: string | undefined, env: NodeJS.ProcessEnv, home: string, base: string): NamedContextPlan {
  const ctx = devContext(p, endpoint, tenant, gateway);
  writeJson(p.contextFile, ctx, 0o600);
  const change = updateConfig(env, home, (cfg) => ({ ...planNamedContext(cfg, base, ctx, p), current: cfg.current }));
  const notes = [
    ...(change.imported ? [`imported ${change.imported.from} as the context "${change.imported.name}" of ${change.config} (it is no longer read)`] : []),
    ...(change.result.note ? [change.result.note] : []),
    ...(env[ENV.context] ? [`${ENV.context}=${env[ENV.context]} is set and takes precedence over the current context`] : []),
  ];
  return { config: change.config, name: change.result.name, written: change.result.written, current: change.result.current, note: notes.length > 0 ? notes.join("; ") : null };
}

// ---------------------------------------------------------------------------------------------
// The admin server
// ---------------------------------------------------------------------------------------------

function cassandraConfigured(env: NodeJS.ProcessEnv): string | null {
  const v = env.QIM_CASSANDRA_CONTACT_POINTS?.trim();
  return v ? v : null;
}

async function startServer(
  p: DevPaths, redis: DevRedisAccess, redisPort: number, port: number, metricsPort: number, env: NodeJS.ProcessEnv, node: DevNodeFiles,
  sync: { port: number; tenant: string } | null = null, units: readonly UnitKind[] = UNIT_KINDS, gatewayPort: number | null = null,
): Promise<{ started: Started } | { failed: "address-in-use" | "exited" | "no-answer"; tail: string; detail: string }> {
  const from = sizeOf(node.log);
  const redisArgs = serverRedisArgs(redis, redisPort);
  const redisWhere = redis.secure ? `redis ${redisArgs[1]} as user ${redis.user}` : `redis ${LOOPBACK}:${redisPort}`;
  writeFileSync(node.log, `--- qimctl dev up ${new Date().toISOString()}: qim-admin-server ${node.nodeId} on ${LOOPBACK}:${port}, ${redisWhere}\n`, { flag: "a" });
  const started = await spawnDetached(process.execPath, [
    ...SERVER_NODE_FLAGS,
    ADMIN_SERVER_BIN,
    ...redisArgs,
    "--listen", `${LOOPBACK}:${port}`,
    "--tls-ca", p.caCert,
    "--tls-cert", p.serverCert,
    "--tls-key", p.serverKey,
    "--audit-log", node.auditLog,
    "--metrics-listen", `${LOOPBACK}:${metricsPort}`,
    // a node of the stack's cluster: its id, state dir, and node service (a port the OS picks) with its node certificate
    "--node-id", node.nodeId,
    "--data-dir", node.dataDir,
    "--node-listen", `${LOOPBACK}:0`,
    "--node-tls-cert", node.cert,
    "--node-tls-key", node.key,
    // the CMD sync HTTP API (every node, each on its own port): application servers' /message/sync with the dev tenant
    ...(sync ? ["--sync-listen", `${LOOPBACK}:${sync.port}`, "--sync-tenant", sync.tenant] : []),
    // the client gateway (every node, each on its own port) with the stack's token keys; TLS with the server certificate
    ...(gatewayPort !== null ? ["--gateway-listen", `${LOOPBACK}:${gatewayPort}`, "--tokens-keys", p.tokenKeys] : []),
    // the kinds of units it takes, said even when all three: the server gets the settings the stack means
    "--cluster-units", units.join(","),
  ], p.dataDir, node.log, serverEnv(env));
  const tls = adminTls(p);
  const attempts = cassandraConfigured(env) ? SERVER_READY_ATTEMPTS_CASSANDRA : SERVER_READY_ATTEMPTS;
  let detail = "no answer";
  for (let i = 0; i < attempts; i++) {
    if (started.exited()) break;
    if (await tcpAccepts(port)) {
      const h = await healthCheck(`localhost:${port}`, tls);
      if (h.serving) return { started };
      detail = h.detail;
    }
    await sleep(100);
  }
  const exited = started.exited();
  await stopStarted(started);
  const tail = logTail(node.log, from);
  if (exited && /EADDRINUSE|address already in use|No address added/i.test(tail)) return { failed: "address-in-use", tail, detail };
  return { failed: exited ? "exited" : "no-answer", tail, detail };
}

/** The authority the server reports (GetStatus), e.g. "redis-hash (development fallback, …)". */
async function serverAuthority(endpoint: string, tls: TlsClientFiles): Promise<string> {
  const { connectAdmin } = await import("../../admin-api/client.js");
  const client = connectAdmin({ endpoint, caPem: tls.caPem, certPem: tls.certPem, keyPem: tls.keyPem, deadlineMs: 15_000 });
  try {
    return (await client.getProjectionStatus({})).authority;
  } finally {
    client.close();
  }
}

export function authorityKind(description: string): DevState["authorityKind"] {
  return /^cassandra/i.test(description) ? "cassandra" : "redis-hash";
}

/** The one line `dev up` and `demo` print about the authority. */
export function authorityLine(s: Pick<DevState, "authority" | "authorityKind">): string {
  return s.authorityKind === "cassandra"
    ? `conversation-set authority: ${s.authority.replace(/^cassandra\s*/i, "cassandra at ")}`
    : "conversation-set authority: redis-hash (development fallback; set QIM_CASSANDRA_CONTACT_POINTS for Cassandra)";
}

// ---------------------------------------------------------------------------------------------
// Probing a running stack
// ---------------------------------------------------------------------------------------------

export interface ProcessProbe {
  pid: number;
  port: number;
  /** The pid is alive and is still the process dev up started. */
  alive: boolean;
  /**
   * Redis answers PING (a secure one over TLS after AUTH with the password file) / the server
   * answers the gRPC health check over mTLS with the admin certificate.
   */
  answering: boolean;
}

/** A node of the stack as dev status sees it. */
/** A node of the stack as dev status shows it: `syncUrl` null when the node serves no CMD sync HTTP API. */
export type NodeProbe = ProcessProbe & { nodeId: string; syncUrl: string | null; gatewayUrl: string | null; units: UnitKind[] };

/** The stack's nodes: those the state records, or (a state written before --nodes) its one server as dev-1. */
function stateNodes(s: DevState): DevNodeState[] {
  return s.nodes ?? [{ nodeId: "dev-1", pid: s.server.pid, port: s.server.port, metricsPort: s.server.metricsPort, metricsUrl: s.server.metricsUrl, log: s.server.log, auditLog: s.server.auditLog }];
}

export async function probe(p: DevPaths, s: DevState): Promise<{ redis: ProcessProbe; server: ProcessProbe; nodes: NodeProbe[] }> {
  const redisAlive = isOurs(s.redis.pid, redisIdentity(p));
  const probeNode = async (n: DevNodeState): Promise<NodeProbe> => {
    const alive = isOurs(n.pid, serverIdentity(p));
    const answering = alive && existsSync(p.adminCert) ? await healthCheck(`localhost:${n.port}`, adminTls(p)).then((h) => h.serving, () => false) : false;
    return { nodeId: n.nodeId, pid: n.pid, port: n.port, alive, answering, syncUrl: n.syncUrl ?? (n === s.nodes?.[0] || !s.nodes ? s.syncUrl ?? null : null), gatewayUrl: n.gatewayUrl ?? null, units: n.units ?? [...UNIT_KINDS] };
  };
  const [redisOk, nodes] = await Promise.all([
    redisAlive ? redisUp(s.redis.port, s.redisAccess) : false,
    Promise.all(stateNodes(s).map(probeNode)),
  ]);
  const first = nodes[0]!;
  return {
    redis: { pid: s.redis.pid, port: s.redis.port, alive: redisAlive, answering: redisOk },
    server: { pid: first.pid, port: first.port, alive: first.alive, answering: first.answering },
    nodes,
  };
}

// ---------------------------------------------------------------------------------------------
// up
// ---------------------------------------------------------------------------------------------

/**
 * A running stack is reused only in the Redis mode asked for: reusing a plaintext Redis for
 * --secure-redis would run what should be the production-like setup without TLS or a password,
 * and the reverse would hand a plaintext client a TLS port. Switching means stopping it first.
 */
function redisModeConflict(p: DevPaths, running: DevRedisAccess): DevStackError {
  const down = `qimctl dev down --data-dir ${p.dataDir}`;
  return running.secure
    ? new DevStackError(EXIT.CONFLICT, "DEV_STACK_REDIS_MODE", `the dev stack in ${p.dataDir} runs with a secure Redis (TLS only, ACL user ${running.user}), and --secure-redis was not given; add --secure-redis to reuse it, or stop it first (${down}) to start it with a plaintext Redis`)
    : new DevStackError(EXIT.CONFLICT, "DEV_STACK_REDIS_MODE", `the dev stack in ${p.dataDir} runs with a plaintext Redis, and --secure-redis asks for TLS and an ACL user; stop it first (${down}) and run again with --secure-redis, or leave out --secure-redis to reuse it`);
}

export async function devUp(opts: DevUpOptions): Promise<DevUpResult> {
  const env = opts.env ?? process.env;
  const home = opts.home ?? os.homedir();
  const progress = opts.progress ?? (() => {});
  const p = devPaths(opts.dataDir);
  const contextName = baseContextName(p, opts.contextName);
  const nodeCount = opts.nodes ?? 1;
  if (!Number.isInteger(nodeCount) || nodeCount < 1 || nodeCount > MAX_DEV_NODES) {
    throw new DevStackError(EXIT.USAGE, "INVALID_NODES", `--nodes must be a whole number from 1 to ${MAX_DEV_NODES}, got ${nodeCount}`);
  }
  const units = parseClusterUnits(opts.clusterUnits ?? [], nodeCount);
  // before anything is created: nothing to undo when redis-server is missing, or when the data dir
  // cannot be written (a file in its place, no permission): refused with its path, exit 2
  writableDir("--data-dir", p.dataDir);
  const redisBin = await requireRedisServer(env);
  const secure = opts.secureRedis === true;
  const release = lock(p);
  const notes: string[] = [];
  const ignored = Object.keys(env).filter(ignoredServerVariable).sort();
  try {
    const previous = readState(p);
    if (previous) {
      const now = await probe(p, previous);
      if (now.redis.answering && now.nodes.every((n) => n.answering)) {
        if (previous.redisAccess.secure !== secure) throw redisModeConflict(p, previous.redisAccess);
        if (now.nodes.length !== nodeCount) {
          throw new DevStackError(EXIT.CONFLICT, "DEV_STACK_NODES", `the dev stack in ${p.dataDir} runs ${now.nodes.length} node(s), not ${nodeCount}; stop it first (qimctl dev down --data-dir ${p.dataDir}) and run dev up --nodes ${nodeCount} again`);
        }
        const runningUnits = stateNodes(previous).map((n) => n.units ?? [...UNIT_KINDS]);
        const differs = runningUnits.map((u, i) => (u.join(",") === units[i]!.join(",") ? null : `dev-${i + 1} takes ${u.join(",")}, not ${units[i]!.join(",")}`)).filter(Boolean);
        if (differs.length > 0) {
          throw new DevStackError(EXIT.CONFLICT, "DEV_STACK_NODES", `the dev stack in ${p.dataDir} runs with other units (${differs.join("; ")}); stop it first (qimctl dev down --data-dir ${p.dataDir}) and run dev up again`);
        }
        if (opts.port !== undefined && opts.port !== previous.server.port) {
          throw new DevStackError(EXIT.CONFLICT, "DEV_STACK_RUNNING", `the dev stack in ${p.dataDir} already runs on port ${previous.server.port}, not ${opts.port}; stop it first (qimctl dev down --data-dir ${p.dataDir})`);
        }
        const namedContext = writeContexts(p, previous.endpoint, previous.tenant, previous.gatewayUrl, env, home, contextName);
        const state: DevState = { ...previous, namedContext };
        // a state written before named contexts had the default context file's plan instead
        delete (state as DevState & { defaultContext?: unknown }).defaultContext;
        writeJson(p.stateFile, state);
        const reusedNotes = [`already running (redis pid ${previous.redis.pid}, server pid ${previous.server.pid}): reused`];
        const wantCassandra = cassandraConfigured(env) !== null;
        if (wantCassandra !== (previous.authorityKind === "cassandra")) {
          reusedNotes.push(`QIM_CASSANDRA_CONTACT_POINTS is ${wantCassandra ? "set" : "not set"}, but the running stack uses ${previous.authorityKind}: run qimctl dev down --data-dir ${p.dataDir} and dev up again to switch`);
        }
        return { ...state, status: "reused", notes: reusedNotes };
      }
      const what = [
        // one node keeps the single-server words
        ...now.nodes.map((n) => {
          const who = now.nodes.length > 1 ? `server ${n.nodeId}` : "server";
          return !n.alive ? `${who} pid ${n.pid} is not running` : !n.answering ? `${who} pid ${n.pid} does not answer` : null;
        }),
        !now.redis.alive ? `redis pid ${previous.redis.pid} is not running` : !now.redis.answering ? `redis pid ${previous.redis.pid} does not answer` : null,
      ].filter(Boolean).join(", ");
      notes.push(`stale state (${what}): cleaned up, started afresh`);
      progress(`stale dev stack state in ${p.dataDir} (${what}): cleaning up`);
    }
    // whatever of this data dir still runs (stale state, or a dev up that died before writing it)
    const strays = stackProcesses(p);
    for (const pid of strays.server) await stopPid(pid, STOP_GRACE_ATTEMPTS);
    for (const pid of strays.redis) await stopPid(pid, STOP_GRACE_ATTEMPTS);
    if (!previous && strays.server.length + strays.redis.length > 0) notes.push(`stopped leftover processes of ${p.dataDir}: ${[...strays.server, ...strays.redis].join(", ")}`);
    rmSync(p.stateFile, { force: true });
    if (ignored.length > 0) notes.push(`not passed to the servers (dev up gives them its own settings; only QIM_CASSANDRA_* is passed on): ${ignored.join(", ")}`);

    let port = opts.port;
    if (port !== undefined && !(await portIsFree(port))) {
      throw new DevStackError(EXIT.CONFLICT, "PORT_IN_USE", `port ${port} on ${LOOPBACK} is in use; choose another --port, or leave it out for a free one`);
    }
    if (port === undefined && previous && (await portIsFree(previous.server.port))) port = previous.server.port;

    const pki = await ensurePki(p, { redis: secure, nodes: nodeCount });
    if (pki.created.length > 0) notes.push(`created ${pki.created.join(", ")} in ${p.pkiDir}`);
    if (await ensureTokenKeys(p)) notes.push(`created the device tokens' signing key in ${p.tokenKeys} (mode 0600; rotate with qimctl token keygen --keys ${p.tokenKeys} --rotate)`);
    const tenant = devTenant(p);
    if (secure) {
      const { password, created } = ensureRedisPassword(p);
      if (created) notes.push(`created the password of Redis user ${SECURE_REDIS_USER} in ${p.redisPassword} (mode 0600)`);
      writeRedisAcl(p, password);
    }

    progress(secure
      ? `starting redis-server (TLS only, ACL user ${SECURE_REDIS_USER}, default user off; AOF, appendfsync always) in ${p.redisDir}`
      : `starting redis-server (AOF, appendfsync always) in ${p.redisDir}`);
    const redis = await startRedis(p, redisBin.binary, env, secure, progress);
    const access = redisAccess(p, secure, redis.port);
    let server: Started | undefined;
    let metricsPort = 0;
    let syncPort = 0;
    let gatewayPort = 0;
    const others: Started[] = [];
    const nodes: DevNodeState[] = [];
    try {
      const cassandra = cassandraConfigured(env);
      progress(`starting the admin server (${cassandra ? `Cassandra at ${cassandra}` : "Redis-hash authority"}); log ${p.serverLog}`);
      for (let attempt = 0; ; attempt++) {
        const listenPort = port ?? (await freePort());
        metricsPort = await freePort();
        syncPort = await freePort();
        gatewayPort = await freePort();
        const r = await startServer(p, access, redis.port, listenPort, metricsPort, env, devNodeFiles(p, 1), { port: syncPort, tenant }, units[0], gatewayPort);
        if ("started" in r) {
          server = r.started;
          port = listenPort;
          break;
        }
        if (r.failed === "address-in-use" && opts.port === undefined && attempt < 3) {
          port = undefined;
          continue;
        }
        const why = r.failed === "no-answer" ? `did not answer the health check on localhost:${listenPort} (last: ${r.detail})` : "exited during start-up";
        throw new DevStackError(r.failed === "no-answer" ? EXIT.CONNECTION : EXIT.INTERNAL, "SERVER_START_FAILED",
          `the admin server ${why}; the redis-server it was started for is stopped again. The end of ${p.serverLog}:\n${indent(r.tail)}`);
      }
      const first = devNodeFiles(p, 1);
      nodes.push({ nodeId: first.nodeId, pid: server.pid, port: port!, metricsPort, metricsUrl: `http://${LOOPBACK}:${metricsPort}/metrics`, log: first.log, auditLog: first.auditLog, syncUrl: `https://${LOOPBACK}:${syncPort}`, gatewayUrl: `wss://localhost:${gatewayPort}`, units: units[0]! });
      for (let i = 2; i <= nodeCount; i++) {
        const files = devNodeFiles(p, i);
        progress(`starting node ${files.nodeId} of ${nodeCount}; log ${files.log}`);
        for (let attempt = 0; ; attempt++) {
          const nodePort = await freePort();
          const nodeMetrics = await freePort();
          const nodeSync = await freePort();
          const nodeGateway = await freePort();
          const r = await startServer(p, access, redis.port, nodePort, nodeMetrics, env, files, { port: nodeSync, tenant }, units[i - 1], nodeGateway);
          if ("started" in r) {
            others.push(r.started);
            nodes.push({
              nodeId: files.nodeId, pid: r.started.pid, port: nodePort, metricsPort: nodeMetrics, metricsUrl: `http://${LOOPBACK}:${nodeMetrics}/metrics`, log: files.log, auditLog: files.auditLog,
              syncUrl: `https://${LOOPBACK}:${nodeSync}`, gatewayUrl: `wss://localhost:${nodeGateway}`, units: units[i - 1]!,
            });
            break;
          }
          if (r.failed === "address-in-use" && attempt < 3) continue;
          const why = r.failed === "no-answer" ? `did not answer the health check on localhost:${nodePort} (last: ${r.detail})` : "exited during start-up";
          throw new DevStackError(r.failed === "no-answer" ? EXIT.CONNECTION : EXIT.INTERNAL, "SERVER_START_FAILED",
            `node ${files.nodeId} ${why}; the stack's other processes are stopped again. The end of ${files.log}:\n${indent(r.tail)}`);
        }
      }
      const endpoint = `localhost:${port}`;
      const tls = adminTls(p);
      const authority = await serverAuthority(endpoint, tls);
      const namedContext = writeContexts(p, endpoint, tenant, nodes[0]!.gatewayUrl, env, home, contextName);
      const state: DevState = {
        dataDir: p.dataDir,
        startedAt: new Date().toISOString(),
        tenant,
        endpoint,
        authority,
        authorityKind: authorityKind(authority),
        redis: { pid: redis.started.pid, port: redis.port, addr: serverRedisArgs(access, redis.port)[1]!, version: redisBin.version, dataDir: p.redisDir, log: p.redisLog },
        redisAccess: access,
        server: { pid: server.pid, port: port!, listen: `${LOOPBACK}:${port}`, metricsPort, metricsUrl: `http://${LOOPBACK}:${metricsPort}/metrics`, log: p.serverLog, auditLog: p.auditLog },
        nodes,
        pki: { dir: p.pkiDir, ca: p.caCert, cert: p.adminCert, key: p.adminKey },
        syncUrl: `https://${LOOPBACK}:${syncPort}`,
        service: { cert: p.serviceCert, key: p.serviceKey },
        gatewayUrl: nodes[0]!.gatewayUrl!,
        context: p.contextFile,
        namedContext,
      };
      writeJson(p.stateFile, state);
      // handed over: from now on `dev down` owns them
      starting.delete(redis.started.pid);
      starting.delete(server.pid);
      for (const o of others) starting.delete(o.pid);
      return { ...state, status: "started", notes };
    } catch (err) {
      for (const o of others.reverse()) await stopStarted(o);
      await stopStarted(server);
      await stopStarted(redis.started);
      throw err;
    }
  } finally {
    release();
  }
}

// ---------------------------------------------------------------------------------------------
// status
// ---------------------------------------------------------------------------------------------

export interface DevStatusResult {
  dataDir: string;
  /** up: both processes alive and answering; partial: something is not; down: no state file. */
  state: "up" | "partial" | "down";
  endpoint: string | null;
  tenant: string | null;
  authority: string | null;
  startedAt: string | null;
  redis: ProcessProbe | null;
  /** How the stack's Redis is reached (TLS only and an ACL user with --secure-redis); null when down. */
  redisAccess: DevRedisAccess | null;
  server: ProcessProbe | null;
  /** Every engine server (node) of the stack with its pid and node id; empty when down. */
  nodes: NodeProbe[];
  /** The CMD sync HTTP API (https://127.0.0.1:P; service certificates only), null when down or not started by this dev up. */
  syncUrl: string | null;
  /** Node 1's client gateway (wss://localhost:P; device tokens), null when down or not started by this dev up. */
  gatewayUrl: string | null;
  context: string | null;
  /** Processes of this data dir that no state file records (e.g. after the state was deleted by hand). */
  strays: number[];
}

export async function devStatus(dataDir: string): Promise<DevStatusResult> {
  const p = devPaths(dataDir);
  const s = readState(p);
  const running = stackProcesses(p);
  if (!s) {
    const strays = [...running.server, ...running.redis];
    return { dataDir: p.dataDir, state: strays.length > 0 ? "partial" : "down", endpoint: null, tenant: null, authority: null, startedAt: null, redis: null, redisAccess: null, server: null, nodes: [], syncUrl: null, gatewayUrl: null, context: null, strays };
  }
  const now = await probe(p, s);
  const known = new Set([s.redis.pid, ...now.nodes.map((n) => n.pid)]);
  const strays = [...running.server, ...running.redis].filter((pid) => !known.has(pid));
  const up = now.redis.answering && now.nodes.every((n) => n.answering) && strays.length === 0;
  return {
    dataDir: p.dataDir,
    state: up ? "up" : "partial",
    endpoint: s.endpoint,
    tenant: s.tenant,
    authority: s.authority,
    startedAt: s.startedAt,
    redis: now.redis,
    redisAccess: s.redisAccess,
    server: now.server,
    nodes: now.nodes,
    syncUrl: s.syncUrl ?? null,
    gatewayUrl: s.gatewayUrl ?? null,
    context: s.context,
    strays,
  };
}

// ---------------------------------------------------------------------------------------------
// restart
// ---------------------------------------------------------------------------------------------

export interface RestartedNode {
  nodeId: string;
  /** The pid it had, and how it was stopped (not ours: the pid belongs to another program now, untouched; already gone: it had exited). */
  previousPid: number;
  stopped: StopHow | "not ours";
  /** The new process, on the same admin, metrics and CMD sync ports, answering the health check. */
  pid: number;
  port: number;
}

export interface DevRestartResult {
  dataDir: string;
  /** The nodes restarted, in order (one with --node, else every node of the stack); Redis is never restarted. */
  restarted: RestartedNode[];
}

/** The admin server processes of the stack again, one node after the other: each stopped (SIGTERM, SIGKILL after the grace period) and started with the settings dev up gave it. */
export async function devRestart(opts: { dataDir: string; node?: number; env?: NodeJS.ProcessEnv; progress?: (line: string) => void }): Promise<DevRestartResult> {
  const env = opts.env ?? process.env;
  const progress = opts.progress ?? (() => {});
  const p = devPaths(opts.dataDir);
  const dd = ` --data-dir ${p.dataDir}`;
  if (!existsSync(p.stateFile)) throw new DevStackError(EXIT.CONNECTION, "DEV_STACK_DOWN", `the dev stack in ${p.dataDir} is not running (no state file); start it with qimctl dev up${dd}`);
  const release = lock(p);
  try {
    const s = readState(p);
    if (!s) throw new DevStackError(EXIT.CONNECTION, "DEV_STACK_DOWN", `the dev stack in ${p.dataDir} is not running (no state file); start it with qimctl dev up${dd}`);
    const nodes = stateNodes(s);
    if (opts.node !== undefined && (!Number.isInteger(opts.node) || opts.node < 1 || opts.node > nodes.length)) {
      const range = nodes.length === 1 ? "1 (the stack runs one node, dev-1)" : `1 to ${nodes.length} (the stack runs dev-1 … dev-${nodes.length})`;
      throw new DevStackError(EXIT.USAGE, "INVALID_NODE", `--node must be ${range}, got ${opts.node}`);
    }
    if (!(await redisUp(s.redis.port, s.redisAccess))) {
      throw new DevStackError(EXIT.CONNECTION, "DEV_STACK_PARTIAL", `the dev stack's Redis (pid ${s.redis.pid}, port ${s.redis.port}) does not answer, so a node started now could not work; repair the stack with qimctl dev up${dd}`);
    }
    // the server reads the authority from its environment: a restart without it would switch authorities under the data
    if ((cassandraConfigured(env) !== null) !== (s.authorityKind === "cassandra")) {
      throw new DevStackError(EXIT.USAGE, "DEV_STACK_AUTHORITY", s.authorityKind === "cassandra"
        ? `the dev stack in ${p.dataDir} runs with Cassandra as its authority: set QIM_CASSANDRA_CONTACT_POINTS (and the other QIM_CASSANDRA_* variables) as for its dev up`
        : `QIM_CASSANDRA_CONTACT_POINTS is set, but the dev stack in ${p.dataDir} runs with the Redis-hash authority: unset it, or run dev down and dev up to switch`);
    }
    const chosen = opts.node !== undefined ? [opts.node] : nodes.map((_, i) => i + 1);
    const identity = serverIdentity(p);
    const restarted: RestartedNode[] = [];
    for (const index of chosen) {
      const n = nodes[index - 1]!;
      const previousPid = n.pid;
      const files = devNodeFiles(p, index);
      let stopped: RestartedNode["stopped"];
      if (!isAlive(n.pid)) stopped = "already gone";
      else if (!isOurs(n.pid, identity)) stopped = "not ours";
      else {
        progress(`stopping node ${n.nodeId} (pid ${n.pid}: SIGTERM, SIGKILL after ${STOP_GRACE_ATTEMPTS * 50 / 1000} s)`);
        try {
          stopped = await stopPid(n.pid, STOP_GRACE_ATTEMPTS);
        } catch {
          throw new DevStackError(EXIT.INTERNAL, "DEV_STACK_STILL_RUNNING", `node ${n.nodeId} (pid ${n.pid}) is still running after SIGKILL`);
        }
      }
      const syncPort = n.syncUrl ? Number(new URL(n.syncUrl).port) : null;
      progress(`starting node ${n.nodeId} on localhost:${n.port}; log ${files.log}`);
      const gatewayPort = n.gatewayUrl ? Number(new URL(n.gatewayUrl).port) : null;
      const r = await startServer(p, s.redisAccess, s.redis.port, n.port, n.metricsPort, env, files, syncPort !== null ? { port: syncPort, tenant: s.tenant } : null, n.units ?? UNIT_KINDS, gatewayPort);
      if (!("started" in r)) {
        const why = r.failed === "address-in-use" ? `could not listen again on its ports (admin ${n.port}, metrics ${n.metricsPort}${syncPort !== null ? `, cmd sync ${syncPort}` : ""}): another program took one` : r.failed === "no-answer" ? `did not answer the health check on localhost:${n.port} (last: ${r.detail})` : "exited during start-up";
        throw new DevStackError(r.failed === "no-answer" ? EXIT.CONNECTION : EXIT.INTERNAL, "SERVER_START_FAILED",
          `node ${n.nodeId} ${why}; it is not running now (qimctl dev up${dd} starts the stack afresh). The end of ${files.log}:\n${indent(r.tail)}`);
      }
      // handed over to the state: from now on dev down owns it
      starting.delete(r.started.pid);
      n.pid = r.started.pid;
      if (index === 1) s.server = { ...s.server, pid: r.started.pid };
      writeJson(p.stateFile, { ...s, nodes });
      restarted.push({ nodeId: n.nodeId, previousPid, stopped, pid: r.started.pid, port: n.port });
    }
    return { dataDir: p.dataDir, restarted };
  } finally {
    release();
  }
}

// ---------------------------------------------------------------------------------------------
// down
// ---------------------------------------------------------------------------------------------

export interface StoppedProcess {
  process: "server" | "redis";
  pid: number;
  /**
   * SIGTERM (stopped in time), SIGKILL (after the grace period), already gone, not ours (the pid
   * now belongs to another program: untouched), or (--dry-run) would stop.
   */
  how: StopHow | "not ours" | "would stop";
}

export interface DevDownResult {
  dataDir: string;
  /** Whether anything of the stack was running. */
  wasRunning: boolean;
  stopped: StoppedProcess[];
  stateRemoved: boolean;
  /** --purge: the named contexts that pointed at this stack, removed from the config file. */
  contextsRemoved: string[];
  /** --purge: the data dir's files (Redis data, PKI, logs, contexts) were removed. */
  purged: boolean;
  /** --dry-run: nothing was stopped or removed; stopped, contextsRemoved and removed say what would be. */
  dryRun: boolean;
  /** --purge: the files and directories removed (or, with --dry-run, that would be), absolute, in the order removed. */
  removed: string[];
}

export async function devDown(opts: { dataDir: string; purge?: boolean; dryRun?: boolean; env?: NodeJS.ProcessEnv; home?: string }): Promise<DevDownResult> {
  const env = opts.env ?? process.env;
  const home = opts.home ?? os.homedir();
  const p = devPaths(opts.dataDir);
  const dryRun = opts.dryRun === true;
  if (!existsSync(p.dataDir)) {
    return { dataDir: p.dataDir, wasRunning: false, stopped: [], stateRemoved: false, contextsRemoved: [], purged: false, dryRun, removed: [] };
  }
  if (dryRun) return devDownPlan(p, opts.purge === true, env, home);
  const release = lock(p);
  try {
    const s = readState(p);
    // the state's pids and any other process of this data dir (a state deleted by hand, a dev up
    // that died before writing it); each is checked again just before it is signalled (pids are reused)
    const running = stackProcesses(p);
    const stopped: StoppedProcess[] = [];
    const left: number[] = [];
    const stop = async (what: StoppedProcess["process"], pid: number, identity: Identity) => {
      if (!isAlive(pid)) stopped.push({ process: what, pid, how: "already gone" });
      else if (!isOurs(pid, identity)) stopped.push({ process: what, pid, how: "not ours" });
      else {
        try {
          stopped.push({ process: what, pid, how: await stopPid(pid, STOP_GRACE_ATTEMPTS) });
        } catch {
          left.push(pid);
        }
      }
    };
    // the server first: it is Redis's client
    const server = serverIdentity(p);
    const redis = redisIdentity(p);
    const recorded = s ? stateNodes(s).map((n) => n.pid) : [];
    for (const pid of recorded) await stop("server", pid, server);
    for (const pid of running.server) if (!recorded.includes(pid)) await stop("server", pid, server);
    if (s) await stop("redis", s.redis.pid, redis);
    for (const pid of running.redis) if (pid !== s?.redis.pid) await stop("redis", pid, redis);
    if (left.length > 0) throw new DevStackError(EXIT.INTERNAL, "DEV_STACK_STILL_RUNNING", `still running after SIGKILL: ${left.join(", ")}`);
    const stateRemoved = existsSync(p.stateFile);
    rmSync(p.stateFile, { force: true });
    // the contexts outlive a stop (the next dev up refreshes them), not a purge: their files are gone
    const contextsRemoved = opts.purge ? removeOurContexts(p, env, home) : [];
    const removed = opts.purge ? purge(p) : [];
    return {
      dataDir: p.dataDir,
      wasRunning: stopped.some((x) => x.how === "SIGTERM" || x.how === "SIGKILL"),
      stopped,
      stateRemoved,
      contextsRemoved,
      purged: opts.purge === true,
      dryRun: false,
      removed,
    };
  } finally {
    release();
  }
}

/** What dev down would do (--dry-run): the processes it would stop, and with --purge the contexts and files it would remove. Changes nothing, takes no lock. */
function devDownPlan(p: DevPaths, purging: boolean, env: NodeJS.ProcessEnv, home: string): DevDownResult {
  const s = readState(p);
  const running = stackProcesses(p);
  const server = serverIdentity(p);
  const redis = redisIdentity(p);
  const stopped: StoppedProcess[] = [];
  const plan = (what: StoppedProcess["process"], pid: number, identity: Identity) => {
    if (stopped.some((x) => x.pid === pid)) return;
    stopped.push({ process: what, pid, how: !isAlive(pid) ? "already gone" : isOurs(pid, identity) ? "would stop" : "not ours" });
  };
  for (const pid of [...(s ? stateNodes(s).map((n) => n.pid) : []), ...running.server]) plan("server", pid, server);
  for (const pid of [...(s ? [s.redis.pid] : []), ...running.redis]) plan("redis", pid, redis);
  return {
    dataDir: p.dataDir,
    wasRunning: stopped.some((x) => x.how === "would stop"),
    stopped,
    stateRemoved: existsSync(p.stateFile),
    contextsRemoved: purging ? ourContexts(p, env, home) : [],
    purged: false,
    dryRun: true,
    removed: purging ? purgeTargets(p) : [],
  };
}

/** The named contexts of the config file that dev up wrote for this data dir (it marks them with the data dir). */
function ourContexts(p: DevPaths, env: NodeJS.ProcessEnv, home: string): string[] {
  const cfg = readConfig(defaultConfigPath(env, home));
  return cfg ? Object.keys(cfg.contexts).filter((n) => contextIsOurs(cfg.contexts[n], p)).sort() : [];
}

/** Removes the named contexts this stack wrote; the current one among them leaves no context current. */
function removeOurContexts(p: DevPaths, env: NodeJS.ProcessEnv, home: string): string[] {
  if (!existsSync(defaultConfigPath(env, home))) return [];
  return updateConfig(env, home, (cfg) => {
    const ours = Object.keys(cfg.contexts).filter((n) => contextIsOurs(cfg.contexts[n], p)).sort();
    for (const n of ours) delete cfg.contexts[n];
    if (cfg.current !== null && ours.includes(cfg.current)) cfg.current = null;
    return ours;
  }).result;
}

/**
 * What a purge removes, absolute, of what exists: only the names the dev stack writes in its data
 * dir — the Redis data, the PKI, the logs (rotated audit logs too), the nodes' state dirs, the
 * password and ACL files, the context file, the state, and the drill reports written there (the
 * default --report-dir of drill rebuild through a dev stack's context, and the demo's) — never
 * anything else.
 */
function purgeTargets(p: DevPaths): string[] {
  const fixed = [p.redisDir, p.pkiDir, p.redisLog, p.redisPassword, p.redisAcl, p.serverLog, p.auditLog, p.nodeIdFile, p.tokenKeys, p.contextFile, p.stateFile];
  const named = safeList(p.dataDir).sort()
    .filter((name) => DRILL_REPORT_NAME.test(name) || /^audit(-\d+)?\.log(\.\d+)?$/.test(name) || /^server-\d+\.log$/.test(name) || /^node-\d+$/.test(name))
    .map((name) => path.join(p.dataDir, name));
  return [...new Set([...fixed, ...named])].filter((f) => existsSync(f));
}

/** Removes what the dev stack keeps in the data dir (purgeTargets), then the dir if nothing else is in it; returns what it removed. */
function purge(p: DevPaths): string[] {
  const removed = purgeTargets(p);
  for (const f of removed) rmSync(f, { recursive: true, force: true });
  try {
    if (safeList(p.dataDir).every((n) => n === "dev.lock")) {
      rmSync(p.lockFile, { force: true });
      rmdirSync(p.dataDir);
      removed.push(p.dataDir);
    }
  } catch {
    // not empty: something of the user's is in there
  }
  return removed;
}

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
