/**
 * Test harness: real redis-server processes on free loopback ports (storage is never mocked).
 *
 * Every server is a child of the current process, listens on 127.0.0.1 only, keeps its data and
 * its log (`redis.log`) in its own directory (a fresh `qim-redis-*` temp dir unless `dir` is
 * given) and is stopped by pid. A process-wide registry SIGKILLs whatever is still alive when
 * the process exits, so an aborted run leaves no redis-server behind. Nothing here ever talks
 * to a Redis it did not start (in particular not a system Redis on 6379).
 *
 * A server can be production-like (issue 15): an ACL user with the `default` user switched off, or
 * the legacy `requirepass`, and TLS only (no plaintext port). Everything the harness does against
 * a server — the readiness PING, CLUSTER INFO, `redis-cli --cluster create` — then authenticates
 * and speaks TLS the same way a client must, and `security` hands a client what it needs.
 */
import { spawn, execFile, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { openSync, closeSync, rmSync } from "node:fs";
import { chmod, mkdtemp, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import tls from "node:tls";
import { createCa, issueClientCert, issueServerCert } from "../../certs/pki.js";
import { freePort as corePort } from "../../core/support/index.js";
import type { RedisConnectionSecurity, TopologyConfig } from "../../core/index.js";

export type { RedisConnectionSecurity, TopologyConfig };

export interface RedisServer {
  host: "127.0.0.1";
  port: number;
  /** pid of the current redis-server process (changes after restart()). */
  readonly pid: number;
  dir: string;
  /**
   * "127.0.0.1:PORT", the TLS port when the server speaks TLS: host:port as redis-cli takes it and
   * as the store's messages name an instance.
   */
  addr: string;
  /**
   * The address a client is configured with: "redis://127.0.0.1:PORT", or
   * "rediss://127.0.0.1:PORT" when the server listens only on TLS. The secure topologies put it in
   * their TopologyConfig, as an operator would.
   */
  url: string;
  /**
   * What a client needs besides the address, to spread into a TopologyConfig: `auth` (the ACL
   * user and password, or the requirepass password alone) and `tls` (the CA, and the client
   * certificate when the server was given one). `{}` for a plain server.
   */
  security: RedisConnectionSecurity;
  /**
   * redis-cli's arguments to reach this server (-h, -p, --tls --cacert [--cert --key], --user) and
   * its environment (REDISCLI_AUTH: the password never goes into argv).
   */
  cli: { args: string[]; env: Record<string, string> };
  /**
   * Sends one command on a connection of its own (TLS and AUTH as `security` says) and returns the
   * reply as text: "+OK", "-ERR ...", ":1" as-is, a bulk string decoded. A refused AUTH is the
   * answer ("-WRONGPASS ..."). Each call is one connection the server counts.
   */
  command(args: string[], timeoutMs?: number): Promise<string>;
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
  /** An ACL user with every permission (`on >password ~* &* +@all`); the `default` user is switched off. */
  acl?: RedisAcl;
  /** The legacy password of the `default` user (AUTH password). Not with `acl`. */
  requirepass?: string;
  /**
   * TLS only: the server listens on a TLS port and on no plaintext one (`--port 0 --tls-port P`).
   * The PEM files go into the server's dir (mode 0600).
   */
  tls?: RedisServerTls;
}

export interface RedisAcl {
  username: string;
  /** Printable ASCII without spaces or quotes (it is written into the server's config file). */
  password: string;
}

export interface RedisServerTls {
  /** The server's certificate and key; the certificate must name 127.0.0.1 (the harness verifies it there). */
  certPem: string;
  keyPem: string;
  /** The CA that signed the server's certificate and the clients' (tls-ca-cert-file). */
  caPem: string;
  /** tls-auth-clients: every client must present a certificate the CA signed. Default false. */
  authClients?: boolean;
  /**
   * A client certificate (clientAuth) and key: what the server presents to its peers
   * (tls-client-cert-file: the cluster bus and replication), what the harness's own connections
   * present, and what `security.tls` hands a client. Required with `authClients` and in a TLS
   * cluster, whose bus asks every peer for a certificate whatever tls-auth-clients says.
   */
  clientCertPem?: string;
  clientKeyPem?: string;
}

export interface RedisClusterHandle {
  /** Every node: the masters first (as created), then the replicas. */
  nodes: RedisServer[];
  /** "127.0.0.1:PORT" of every master as created. */
  seeds: string[];
  /** What a client needs besides the seeds (the same for every node). */
  security: RedisConnectionSecurity;
  /** The cluster's view now, read from a live node (CLUSTER NODES): who is master of which slots, who replicates whom. */
  view(): Promise<ClusterNodeView[]>;
  /** The live master that serves `key`'s slot now. */
  masterOf(key: string): Promise<RedisServer>;
  /**
   * SIGKILLs `master` and waits until one of its replicas is promoted: the replica says it is a
   * master, every live node reports cluster_state:ok and names it for all of the dead master's
   * slots. The dead node keeps its dir (rejoin() restarts it).
   */
  killMaster(master: RedisServer, opts?: { afterKill?: () => void }): Promise<{ promoted: RedisServer; waitedMs: number }>;
  /** The nodes that replicate `master` now. */
  replicasOf(master: RedisServer): Promise<RedisServer[]>;
  /** Restarts a killed node on its dir (its nodes.conf) and waits until it replicates its old slots' new master. */
  rejoin(node: RedisServer): Promise<void>;
  stop(): Promise<void>;
}

export interface ClusterNodeView {
  id: string;
  /** "127.0.0.1:PORT" */
  addr: string;
  role: "master" | "replica";
  /** The master's id for a replica. */
  masterId: string | null;
  /** Flagged fail or fail? by the node asked. */
  failing: boolean;
  /** Slot ranges served, [from, to] inclusive (masters). */
  slots: [number, number][];
}

export interface ClusterShape {
  /** Replicas per master (default 0, as before). */
  replicas?: number;
  /**
   * cluster-node-timeout in ms (default 5000): how long a master may be unreachable before its
   * replica takes over. A failover test keeps it small (1000–2000) so that promotion is quick.
   */
  nodeTimeoutMs?: number;
}

export type TopologyKind = "single" | "multi" | "cluster" | "secure" | "cluster-secure";

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

const KINDS: readonly TopologyKind[] = ["single", "multi", "cluster", "secure", "cluster-secure"];
/** Every topology but cluster-secure: the acceptance suites add it (ACCEPTANCE_TOPOLOGIES). */
const DEFAULT_KINDS: readonly TopologyKind[] = ["single", "multi", "cluster", "secure"];

/** The topologies QIM_TEST_TOPOLOGIES names (in KINDS order), or `defaults` when it is unset. */
function topologiesFromEnv(defaults: readonly TopologyKind[]): TopologyKind[] {
  const raw = process.env.QIM_TEST_TOPOLOGIES;
  if (raw === undefined || raw.trim() === "") return [...defaults];
  const picked = raw.split(",").map((s) => s.trim()).filter((s) => s.length > 0);
  for (const k of picked) {
    if (!(KINDS as readonly string[]).includes(k)) {
      throw new Error(`QIM_TEST_TOPOLOGIES: unknown topology "${k}" (expected a comma list of ${KINDS.join(", ")})`);
    }
  }
  return KINDS.filter((k) => picked.includes(k));
}

/**
 * Topologies the suites iterate over: single, multi, cluster and secure; QIM_TEST_TOPOLOGIES
 * (e.g. single,cluster-secure) names exactly the ones to run instead.
 */
export const ALL_TOPOLOGIES: TopologyKind[] = topologiesFromEnv(DEFAULT_KINDS);

/**
 * The ADR-0021 acceptance suites (boundaries, concurrency): ALL_TOPOLOGIES and cluster-secure, a
 * Cluster with ACL and TLS on its bus — the production shape the acceptance must hold on. Starting
 * it costs a few seconds, so the other suites leave it out. QIM_TEST_TOPOLOGIES overrides this
 * list too.
 */
export const ACCEPTANCE_TOPOLOGIES: TopologyKind[] = topologiesFromEnv(KINDS);

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

/** How the harness reaches one server: its port, TLS options when TLS, AUTH when a password is set. */
interface Endpoint {
  port: number;
  tls?: tls.ConnectionOptions;
  auth?: { username?: string; password: string };
}

/** One reply at `from`: its text ("+OK", "-ERR..." as-is, a bulk string decoded) and where it ends; null until complete. */
function parseReply(buf: Buffer, from: number): [string, number] | null {
  const eol = buf.indexOf("\r\n", from);
  if (eol < 0) return null;
  const head = buf.subarray(from, eol).toString("utf8");
  if (!head.startsWith("$")) return [head, eol + 2];
  const len = Number(head.slice(1));
  if (len < 0) return ["", eol + 2];
  if (buf.length < eol + 2 + len + 2) return null;
  return [buf.subarray(eol + 2, eol + 2 + len).toString("utf8"), eol + 2 + len + 2];
}

function encodeCommand(args: string[]): string {
  let req = `*${args.length}\r\n`;
  for (const a of args) req += `$${Buffer.byteLength(a)}\r\n${a}\r\n`;
  return req;
}

/**
 * Sends one command (after AUTH when the endpoint has a password, on TLS when it has TLS options)
 * and returns its reply as text, or the AUTH error when AUTH was refused.
 */
function rawCommand(ep: Endpoint, args: string[], timeoutMs = 1_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = ep.tls ? tls.connect({ ...ep.tls, host: HOST, port: ep.port }) : net.connect({ host: HOST, port: ep.port });
    const replies = ep.auth ? 2 : 1;
    let buf = Buffer.alloc(0);
    const done = (err: Error | null, value?: string) => {
      clearTimeout(timer);
      sock.destroy();
      if (err) reject(err);
      else resolve(value!);
    };
    const timer = setTimeout(() => done(new Error(`timeout talking to ${HOST}:${ep.port}`)), timeoutMs);
    sock.once("error", (e) => done(e));
    sock.once("close", () => done(new Error(`connection to ${HOST}:${ep.port} closed`)));
    sock.once(ep.tls ? "secureConnect" : "connect", () => {
      const auth = ep.auth ? encodeCommand(["AUTH", ...(ep.auth.username !== undefined ? [ep.auth.username] : []), ep.auth.password]) : "";
      sock.write(auth + encodeCommand(args));
    });
    sock.on("data", (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      let at = 0;
      for (let i = 0; i < replies; i++) {
        const r = parseReply(buf, at);
        if (!r) return;
        const [text, end] = r;
        if (i < replies - 1 && text.startsWith("-")) return done(null, text);
        if (i === replies - 1) return done(null, text);
        at = end;
      }
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

function spawnServer(dir: string, args: string[]): Running {
  installSafetyNet();
  const fd = openSync(path.join(dir, LOG_FILE), "a");
  let child: ChildProcess;
  try {
    child = spawn("redis-server", args, {
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

async function waitReady(ep: Endpoint, dir: string, running: Running): Promise<void> {
  const port = ep.port;
  const deadline = Date.now() + START_TIMEOUT_MS;
  let last = "";
  for (;;) {
    if (!running.alive) {
      const tail = await logTail(dir);
      if (/Address already in use/i.test(tail)) throw new AddrInUseError(`port ${port} already in use`);
      throw new Error(`redis-server on port ${port} exited during start-up. Log tail (${dir}/${LOG_FILE}):\n${tail}`);
    }
    try {
      last = await rawCommand(ep, ["PING"], 500);
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

/** Where, in the server's dir, redis-server reads what the security options give it. */
const SECURITY_FILES = {
  conf: "auth.conf",
  ca: "tls-ca.crt",
  cert: "tls-server.crt",
  key: "tls-server.key",
  clientCert: "tls-client.crt",
  clientKey: "tls-client.key",
} as const;

/** Readable by the owner only, also when the file was there already (a given `dir`, a restart). */
async function writePrivate(file: string, text: string): Promise<void> {
  await writeFile(file, text, { mode: 0o600 });
  await chmod(file, 0o600);
}

/** A config-file token, double-quoted (redis-server's sdssplitargs reads \" and \\). */
function confToken(s: string): string {
  return `"${s.replace(/[\\"]/g, "\\$&")}"`;
}

function checkSecret(what: string, s: string): void {
  if (!/^[\x21-\x7e]+$/.test(s)) throw new Error(`startRedis: ${what} must be printable ASCII without spaces (it goes into the server's config file)`);
}

function checkSecurity(opts: StartRedisOptions): void {
  if (opts.acl && opts.requirepass !== undefined) {
    throw new Error("startRedis: acl switches the default user off and requirepass is that user's password: give one of them");
  }
  if (opts.acl) {
    checkSecret("acl.username", opts.acl.username);
    checkSecret("acl.password", opts.acl.password);
  }
  if (opts.requirepass !== undefined) checkSecret("requirepass", opts.requirepass);
  const t = opts.tls;
  if (t && (t.clientCertPem === undefined) !== (t.clientKeyPem === undefined)) {
    throw new Error("startRedis: tls.clientCertPem and tls.clientKeyPem go together");
  }
  if (t?.authClients && t.clientCertPem === undefined) {
    throw new Error("startRedis: tls.authClients needs tls.clientCertPem/clientKeyPem (the harness's own connections present them)");
  }
}

/**
 * Writes what redis-server reads from files — the ACL user or the requirepass password in a config
 * file (so no secret is in argv), the PEM files — and returns the arguments that point it there
 * (the config file first: redis-server takes it only as its first argument).
 */
async function writeSecurityFiles(opts: StartRedisOptions, dir: string): Promise<{ conf: string[]; tls: string[] }> {
  const file = (name: keyof typeof SECURITY_FILES) => path.join(dir, SECURITY_FILES[name]);
  const conf: string[] = [];
  if (opts.acl) {
    const { username, password } = opts.acl;
    conf.push(
      "user default off",
      `user ${confToken(username)} on ${confToken(`>${password}`)} ${confToken("~*")} ${confToken("&*")} ${confToken("+@all")}`,
      // replicas (none in these topologies yet) authenticate to their master as the same user
      `masteruser ${confToken(username)}`,
      `masterauth ${confToken(password)}`,
    );
  } else if (opts.requirepass !== undefined) {
    conf.push(`requirepass ${confToken(opts.requirepass)}`, `masterauth ${confToken(opts.requirepass)}`);
  }
  const out = { conf: [] as string[], tls: [] as string[] };
  if (conf.length > 0) {
    await writePrivate(file("conf"), `${conf.join("\n")}\n`);
    out.conf.push(file("conf"));
  }
  const t = opts.tls;
  if (t) {
    await writePrivate(file("ca"), t.caPem);
    await writePrivate(file("cert"), t.certPem);
    await writePrivate(file("key"), t.keyPem);
    out.tls.push(
      "--tls-cert-file", file("cert"),
      "--tls-key-file", file("key"),
      "--tls-ca-cert-file", file("ca"),
      "--tls-auth-clients", t.authClients ? "yes" : "no",
    );
    if (t.clientCertPem !== undefined && t.clientKeyPem !== undefined) {
      await writePrivate(file("clientCert"), t.clientCertPem);
      await writePrivate(file("clientKey"), t.clientKeyPem);
      out.tls.push("--tls-client-cert-file", file("clientCert"), "--tls-client-key-file", file("clientKey"));
    }
  }
  return out;
}

/** What a client needs besides the address (RedisServer.security). */
function securityOf(opts: StartRedisOptions): RedisConnectionSecurity {
  const out: RedisConnectionSecurity = {};
  if (opts.acl) out.auth = { username: opts.acl.username, password: opts.acl.password };
  else if (opts.requirepass !== undefined) out.auth = { password: opts.requirepass };
  if (opts.tls) {
    out.tls = { caPem: opts.tls.caPem };
    if (opts.tls.clientCertPem !== undefined) out.tls.certPem = opts.tls.clientCertPem;
    if (opts.tls.clientKeyPem !== undefined) out.tls.keyPem = opts.tls.clientKeyPem;
  }
  return out;
}

/** redis-cli's TLS and user arguments (the files are the server's own) and REDISCLI_AUTH. */
function cliSecurity(opts: StartRedisOptions, dir: string): { args: string[]; env: Record<string, string> } {
  const file = (name: keyof typeof SECURITY_FILES) => path.join(dir, SECURITY_FILES[name]);
  const args: string[] = [];
  const env: Record<string, string> = {};
  if (opts.tls) {
    args.push("--tls", "--cacert", file("ca"));
    if (opts.tls.clientCertPem !== undefined) args.push("--cert", file("clientCert"), "--key", file("clientKey"));
  }
  if (opts.acl) {
    args.push("--user", opts.acl.username);
    env.REDISCLI_AUTH = opts.acl.password;
  } else if (opts.requirepass !== undefined) {
    env.REDISCLI_AUTH = opts.requirepass;
  }
  return { args, env };
}

function endpointOf(port: number, security: RedisConnectionSecurity): Endpoint {
  const ep: Endpoint = { port };
  if (security.auth) ep.auth = security.auth;
  if (security.tls) {
    const { caPem, certPem, keyPem } = security.tls;
    ep.tls = { ca: caPem, ...(certPem !== undefined ? { cert: certPem, key: keyPem } : {}) };
  }
  return ep;
}

function serverArgs(opts: StartRedisOptions, dir: string, port: number, files: { conf: string[]; tls: string[] }): string[] {
  const args = [
    ...files.conf,
    "--bind", HOST,
    // TLS only: no plaintext port at all, so a client that forgets TLS cannot get in
    ...(opts.tls ? ["--port", "0", "--tls-port", String(port), ...files.tls] : ["--port", String(port)]),
    "--save", "",
    "--appendonly", opts.appendonly ? "yes" : "no",
    "--dir", dir,
    "--daemonize", "no",
    "--protected-mode", "no",
    "--loglevel", "warning",
    // a replica's first sync starts at once: Redis 7 waits 5 s by default for more replicas to
    // share a diskless transfer, which alone ate a CI run's whole link deadline
    "--repl-diskless-sync-delay", "0",
  ];
  if (opts.appendfsync) args.push("--appendfsync", opts.appendfsync);
  args.push(...(opts.extraArgs ?? []));
  return args;
}

/**
 * Starts a redis-server on a free 127.0.0.1 port and waits until it answers PING (authenticated
 * and over TLS when the options say so).
 */
export async function startRedis(opts: StartRedisOptions = {}): Promise<RedisServer> {
  checkSecurity(opts);
  const ownDir = opts.dir === undefined;
  let dir: string;
  if (opts.dir !== undefined) {
    dir = path.resolve(opts.dir);
    await mkdir(dir, { recursive: true });
  } else {
    dir = await mkdtemp(path.join(os.tmpdir(), "qim-redis-"));
    ownedDirs.add(dir);
  }
  const clusterBus = (opts.extraArgs ?? []).some((a, i, all) => a === "--cluster-enabled" && all[i + 1] === "yes");
  const security = securityOf(opts);

  let port = 0;
  let args: string[] = [];
  let running: Running | undefined;
  try {
    const files = await writeSecurityFiles(opts, dir);
    // A port probed free can be taken by someone else before redis binds it: retry a few times.
    for (let attempt = 0; ; attempt++) {
      // the cluster bus listens on the TLS port + 10000 when the bus is on TLS, else port + 10000
      port = await freePort({ clusterBus });
      args = serverArgs(opts, dir, port, files);
      const r = spawnServer(dir, args);
      try {
        await waitReady(endpointOf(port, security), dir, r);
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

  const endpoint = endpointOf(port, security);
  const cli = cliSecurity(opts, dir);
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
    url: `${opts.tls ? "rediss" : "redis"}://${HOST}:${port}`,
    security,
    cli: { args: ["-h", HOST, "-p", String(port), ...cli.args], env: cli.env },
    command: (cmd, timeoutMs) => rawCommand(endpoint, cmd, timeoutMs),
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
      const r = spawnServer(dir, args);
      current = r;
      await waitReady(endpoint, dir, r);
    },
  };
  return server;
}

// ---------------------------------------------------------------------------------------------
// Cluster
// ---------------------------------------------------------------------------------------------

function execFileText(file: string, args: string[], env: Record<string, string>, timeoutMs: number): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, ...env } }, (err, stdout, stderr) => {
      if (err) {
        // argv carries no secret (the password goes in the environment), so it can be shown
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

/** CLUSTER NODES's text as views (see ClusterNodeView). */
function parseClusterNodes(text: string): ClusterNodeView[] {
  const out: ClusterNodeView[] = [];
  for (const line of text.split(/\r?\n/)) {
    const f = line.trim().split(" ");
    if (f.length < 8) continue;
    const flags = f[2]!.split(",");
    const slots: [number, number][] = [];
    for (const r of f.slice(8)) {
      if (r.startsWith("[")) continue; // a slot being migrated
      const [a, b] = r.split("-");
      slots.push([Number(a), Number(b ?? a)]);
    }
    out.push({
      id: f[0]!,
      addr: f[1]!.split("@")[0]!,
      role: flags.includes("master") ? "master" : "replica",
      masterId: f[3] === "-" ? null : f[3]!,
      failing: flags.includes("fail") || flags.includes("fail?"),
      slots,
    });
  }
  return out;
}

/**
 * Starts `masters` cluster-enabled servers (and `shape.replicas` replicas of each), joins them with
 * `redis-cli --cluster create --cluster-replicas N` and waits until every node reports
 * cluster_state:ok, all 16384 slots assigned and ok, and knows all the other nodes, and every
 * replica's link to its master is up. `opts` apply to every node; with `tls` the cluster bus
 * and replication run on TLS too (tls-cluster, tls-replication), which needs `tls.clientCertPem`:
 * a node presents it to the peers it connects to, and the bus always asks for one.
 */
export async function startRedisCluster(masters = 3, opts: StartRedisOptions = {}, shape: ClusterShape = {}): Promise<RedisClusterHandle> {
  if (!Number.isInteger(masters) || masters < 3) {
    throw new Error(`startRedisCluster: redis-cli --cluster create needs at least 3 masters (got ${masters})`);
  }
  if (opts.tls && opts.tls.clientCertPem === undefined) {
    throw new Error("startRedisCluster: a TLS cluster needs tls.clientCertPem/clientKeyPem (the cluster bus asks every peer for a certificate)");
  }
  const replicas = shape.replicas ?? 0;
  const total = masters * (1 + replicas);
  const nodes = await startMany(total, {
    ...opts,
    extraArgs: [
      "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", String(shape.nodeTimeoutMs ?? 5000),
      ...(opts.tls ? ["--tls-cluster", "yes", "--tls-replication", "yes"] : []),
      ...(opts.extraArgs ?? []),
    ],
  });
  const cli = cliSecurity(opts, nodes[0]!.dir);
  try {
    // redis-cli makes the first `masters` addresses the masters and the rest their replicas
    await execFileText(
      "redis-cli",
      ["--cluster", "create", ...nodes.map((n) => n.addr), "--cluster-replicas", String(replicas), "--cluster-yes", ...cli.args],
      cli.env,
      CLUSTER_CREATE_TIMEOUT_MS,
    );
    await clusterReady(nodes, total, CLUSTER_READY_TIMEOUT_MS);
  } catch (e) {
    const tails = await Promise.all(nodes.map(async (n) => `--- ${n.addr} (${n.dir}) ---\n${await logTail(n.dir, 15)}`));
    await stopAll(nodes).catch(() => undefined);
    throw new Error(`${(e as Error).message}\n${tails.join("\n")}`);
  }
  const dead = new Set<RedisServer>();
  const byAddr = new Map(nodes.map((n) => [n.addr, n]));
  const live = () => nodes.filter((n) => !dead.has(n));
  const view = async (): Promise<ClusterNodeView[]> => {
    let last: unknown;
    for (const n of live()) {
      try {
        return parseClusterNodes(await n.command(["CLUSTER", "NODES"]));
      } catch (e) {
        last = e;
      }
    }
    throw new Error(`no live node answered CLUSTER NODES: ${String(last)}`);
  };
  const masterOf = async (key: string): Promise<RedisServer> => {
    const slot = Number((await live()[0]!.command(["CLUSTER", "KEYSLOT", key])).slice(1));
    const m = (await view()).find((v) => v.role === "master" && !v.failing && v.slots.some(([a, b]) => slot >= a && slot <= b));
    const server = m && byAddr.get(m.addr);
    if (!server) throw new Error(`no live master serves slot ${slot} of ${key}`);
    return server;
  };
  return {
    nodes,
    seeds: nodes.slice(0, masters).map((n) => n.addr),
    security: nodes[0]!.security,
    view,
    masterOf,
    async replicasOf(master) {
      const v = await view();
      const me = v.find((x) => x.addr === master.addr);
      return me ? v.filter((x) => x.masterId === me.id).map((x) => byAddr.get(x.addr)!) : [];
    },
    async killMaster(master, killOpts = {}) {
      const before = await view();
      const me = before.find((v) => v.addr === master.addr);
      if (!me || me.role !== "master") throw new Error(`killMaster: ${master.addr} is not a master`);
      const candidates = before.filter((v) => v.masterId === me.id).map((v) => byAddr.get(v.addr)!);
      if (candidates.length === 0) throw new Error(`killMaster: ${master.addr} has no replica to promote`);
      const started = Date.now();
      await master.kill9();
      dead.add(master);
      killOpts.afterKill?.();
      const deadline = started + CLUSTER_READY_TIMEOUT_MS;
      for (;;) {
        const states = await Promise.all(live().map(async (n) => {
          try {
            const info = parseInfo(await n.command(["CLUSTER", "INFO"]));
            const v = parseClusterNodes(await n.command(["CLUSTER", "NODES"]));
            return { ok: info.get("cluster_state") === "ok", view: v };
          } catch {
            return { ok: false, view: [] as ClusterNodeView[] };
          }
        }));
        // every live node names the same promoted replica as the master of all the dead master's slots
        const promotedAddrs = states.map((st) => {
          const owners = me.slots.map(([a]) => st.view.find((v) => v.role === "master" && !v.failing && v.slots.some(([x, y]) => a >= x && a <= y))?.addr);
          return owners.every((o) => o !== undefined && o === owners[0]) ? owners[0] : undefined;
        });
        const winner = promotedAddrs[0];
        const promoted = winner === undefined ? undefined : candidates.find((c) => c.addr === winner);
        if (promoted && states.every((st) => st.ok) && promotedAddrs.every((a) => a === winner)) {
          return { promoted, waitedMs: Date.now() - started };
        }
        if (Date.now() > deadline) throw new Error(`killMaster: no replica of ${master.addr} was promoted within ${CLUSTER_READY_TIMEOUT_MS} ms`);
        await sleep(50);
      }
    },
    async rejoin(node) {
      if (!dead.has(node)) throw new Error(`rejoin: ${node.addr} was not killed`);
      await node.restart();
      dead.delete(node);
      await clusterReady(live(), total, CLUSTER_READY_TIMEOUT_MS);
      // a master that was failed over starts as a master from its nodes.conf and turns into a
      // replica only once gossip tells it: until then it can look ready (the full suite caught
      // it answering "master" here once). Done when its own role is the one the others see.
      const deadline = Date.now() + CLUSTER_READY_TIMEOUT_MS;
      const others = live().filter((n) => n !== node);
      for (;;) {
        const own = parseInfo(await node.command(["INFO", "replication"])).get("role") === "master" ? "master" : "replica";
        const seen = others.length === 0 ? own : parseClusterNodes(await others[0]!.command(["CLUSTER", "NODES"])).find((v) => v.addr === node.addr)?.role;
        if (seen === own && (own === "master" || parseInfo(await node.command(["INFO", "replication"])).get("master_link_status") === "up")) return;
        if (Date.now() > deadline) throw new Error(`rejoin: ${node.addr} is a ${own} by its own word and a ${seen ?? "stranger"} by ${others[0]?.addr} after ${CLUSTER_READY_TIMEOUT_MS} ms`);
        await sleep(50);
      }
    },
    stop: () => stopAll(nodes),
  };
}

/**
 * Polls until each of `nodes` reports cluster_state:ok with every slot assigned and ok and
 * `known` nodes, and, when it is a replica, master_link_status:up.
 */
async function clusterReady(nodes: RedisServer[], known: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const pending = new Set(nodes);
  let lastState = "";
  while (pending.size > 0) {
    for (const node of [...pending]) {
      try {
        const info = parseInfo(await node.command(["CLUSTER", "INFO"]));
        const repl = parseInfo(await node.command(["INFO", "replication"]));
        const linked = repl.get("role") === "master" || repl.get("master_link_status") === "up";
        if (
          info.get("cluster_state") === "ok" &&
          info.get("cluster_slots_assigned") === "16384" &&
          info.get("cluster_slots_ok") === "16384" &&
          info.get("cluster_known_nodes") === String(known) &&
          linked
        ) {
          pending.delete(node);
        } else {
          lastState = `${node.addr}: state=${info.get("cluster_state")} assigned=${info.get("cluster_slots_assigned")} known=${info.get("cluster_known_nodes")} role=${repl.get("role")} link=${repl.get("master_link_status") ?? "-"}`;
        }
      } catch (e) {
        lastState = `${node.addr}: ${(e as Error).message}`;
      }
    }
    if (pending.size === 0) break;
    if (Date.now() > deadline) throw new Error(`cluster not ready within ${timeoutMs} ms (${lastState})`);
    await sleep(100);
  }
}

// ---------------------------------------------------------------------------------------------
// Topologies
// ---------------------------------------------------------------------------------------------

/** The ACL user and the PKI of the secure topologies (issue 15), the same for every server of a process. */
export interface RedisTestSecurity {
  acl: RedisAcl;
  /** CA, a server certificate for localhost and 127.0.0.1, a client certificate; tls-auth-clients yes. */
  tls: Required<RedisServerTls>;
}

let testSecurity: RedisTestSecurity | undefined;

/**
 * Built on first use, once per process (three RSA keys). The password is random per process, so a
 * test can look for it in error messages and logs without matching anything else.
 */
export function redisTestSecurity(): RedisTestSecurity {
  if (!testSecurity) {
    const ca = createCa({ commonName: "qim test Redis CA" });
    const server = issueServerCert(ca, { hosts: ["localhost", "127.0.0.1"] });
    // Redis reads no role from a client certificate: any subject the CA signed is let in
    const client = issueClientCert(ca, { name: "qim-engine", role: null, allowAnyRole: true });
    testSecurity = {
      acl: { username: "qim-engine", password: `pw-${randomBytes(12).toString("hex")}` },
      tls: {
        certPem: server.certPem,
        keyPem: server.keyPem,
        caPem: ca.certPem,
        // Redis's own default, and what a production Redis with TLS asks of its clients
        authClients: true,
        clientCertPem: client.certPem,
        clientKeyPem: client.keyPem,
      },
    };
  }
  return testSecurity;
}

/**
 * "single": one standalone instance; "multi": three standalone instances (addrs in order);
 * "cluster": a 3-master Redis Cluster; "secure": one standalone instance with an ACL user (the
 * default user off) on TLS only, client certificates required; "cluster-secure": a 3-master
 * Cluster likewise, its bus on TLS. The secure kinds' config names rediss:// addresses and carries
 * the user, the password and the PEM text (RedisServer.security), so a store built from it alone
 * connects.
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
    case "secure": {
      const servers = await startMany(1, redisTestSecurity());
      return {
        kind,
        config: { kind: "instances", addrs: servers.map((s) => s.url), ...servers[0]!.security },
        servers,
        stop: () => stopAll(servers),
      };
    }
    case "cluster":
    case "cluster-secure": {
      const cluster = await startRedisCluster(3, kind === "cluster" ? {} : redisTestSecurity());
      return {
        kind,
        config: kind === "cluster"
          ? { kind: "cluster", seeds: cluster.seeds }
          : { kind: "cluster", seeds: cluster.nodes.map((n) => n.url), ...cluster.security },
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
