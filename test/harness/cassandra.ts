/**
 * Test harness: a real single-node Apache Cassandra (5.0, from the jars that
 * scripts/cassandra-fetch.sh caches; storage is never mocked).
 *
 * Every node is a JVM child of the current process running CassandraDaemon in the foreground,
 * in its own process group (detached: a Ctrl+C in the terminal does not reach it, the harness
 * stops it), on free loopback ports (CQL, storage, local JMX) with a fresh `qim-cassandra-*` temp
 * dir holding our own cassandra.yaml and logback.xml, the data and the logs (`logs/system.log`,
 * JVM output in `logs/stdout.log`). Ready means a real `SELECT release_version FROM system.local`
 * answered. stop() sends SIGTERM to the process group (SIGKILL after 20 s) and removes the dir.
 *
 * Java: Java 17 (Cassandra 5.0 does not run on 24+), found by scripts/prerequisites.mjs's
 * findJava17 — `$QIM_JAVA` if set, else `java` on PATH, else one under /usr/lib/jvm — the same
 * lookup `npm test` makes; the jar fetch runs on it too. Missing jars are fetched on first use (scripts/cassandra-fetch.sh, about 30 s once);
 * when that fails, startCassandra() throws: the tests fail, they never skip.
 *
 * Safety net: a process 'exit' hook SIGKILLs every node still alive (and removes its dir);
 * SIGINT/SIGTERM do the same unless another listener owns the signal (see installSafetyNet).
 * This is how the node of sharedCassandra() is stopped when it was started in the test process
 * itself: node:test has no process-wide `after`, so it lives until the process exits and is
 * then killed synchronously (a throwaway temp node needs no clean shutdown). Under
 * scripts/run-tests.mjs the runner starts ONE node for the whole run and passes it as
 * QIM_TEST_CASSANDRA, so the test processes start none.
 *
 * Security (startCassandra's `auth`, `tls`; the shared node has neither): PasswordAuthenticator
 * with CassandraAuthorizer and the default superuser created at once; client encryption required
 * through PEMBasedSslContextFactory, the key and certificate in tls/ of the node's dir.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { createPrivateKey } from "node:crypto";
import { closeSync, existsSync, openSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { mkdtemp, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseHostPort } from "../../core/index.js";
import cassandra from "cassandra-driver";
import { freePort } from "./redis.js";

export interface CassandraNode {
  host: string;
  port: number;
  /** "127.0.0.1:PORT" (a cassandra-driver contact point). */
  contactPoint: string;
  localDataCenter: "datacenter1";
  /** release_version as the node reports it (e.g. "5.0.9"). */
  version: string;
  /** pid of the JVM, also its process group id. */
  pid: number;
  dir: string;
  /**
   * The driver options of the harness's own connections (its readiness check): with `auth` the
   * default superuser `cassandra`/`cassandra`, with `tls` the node's CA and the probe's client
   * certificate. For a test's own set-up (CREATE ROLE, GRANT).
   */
  clientOptions(): Pick<cassandra.ClientOptions, "contactPoints" | "localDataCenter" | "protocolOptions" | "credentials" | "sslOptions">;
  /** SIGTERM to the process group, wait for exit (SIGKILL after 20 s), remove the dir. Idempotent. */
  stop(): Promise<void>;
}

export interface StartCassandraOptions {
  /** Max heap (-Xmx) in MiB; default 512. -Xms is min(256, heapMb). */
  heapMb?: number;
  /**
   * PasswordAuthenticator with CassandraAuthorizer: clients log in, and a role sees only what
   * was granted to it, as on a production cluster, so a test proves that the grants it documents
   * are enough. The default superuser `cassandra`/`cassandra` is created at once (no 10 s delay).
   */
  auth?: boolean;
  /** Client encryption only (TLS required, no plaintext port): see CassandraTlsOptions. */
  tls?: CassandraTlsOptions;
}

/**
 * The node's `client_encryption_options`, through Cassandra's PEMBasedSslContextFactory (4.1+), so
 * PEM certificates of certs/pki.ts work without a JKS keystore. Enabled, not optional.
 */
export interface CassandraTlsOptions {
  /** The node's certificate (it must name 127.0.0.1, the address clients connect to) and key (PKCS#1 or PKCS#8 PEM). */
  certPem: string;
  keyPem: string;
  /**
   * The CA that issued certPem and (with requireClientAuth) the clients' certificates: the
   * node's truststore and what the harness verifies the node with. Default: certPem itself
   * (a self-signed node certificate).
   */
  caPem?: string;
  /** `require_client_auth: true`: the TLS handshake needs a client certificate issued by caPem. */
  requireClientAuth?: boolean;
  /** The client certificate of the harness's own connections; needed with requireClientAuth. */
  probe?: { certPem: string; keyPem: string };
}

export interface SharedCassandra {
  contactPoint: string;
  localDataCenter: string;
}

const HOST = "127.0.0.1";
const SUPERUSER = { username: "cassandra", password: "cassandra" } as const;
// As CassandraAuthority: protocol v4 from the start, since the driver's downgrade from its first
// try (DSE v2) can crash the process with an uncaught TypeError when the node requires client
// certificates.
const PROTOCOL_OPTIONS = { maxVersion: 4 } as const;
const LOCAL_DC = "datacenter1" as const;
const READY_TIMEOUT_MS = 180_000;
const STOP_GRACE_MS = 20_000;
const POLL_MS = 500;
const START_ATTEMPTS = 3;
const LOG_TAIL_LINES = 40;

// ---------------------------------------------------------------------------------------------
// Process-wide safety net
// ---------------------------------------------------------------------------------------------

/** pid (= process group id) -> temp dir, for every node not yet stopped. */
const live = new Map<number, string>();
/** Dirs of cluster nodes that are down (killed or stopped) but kept for a restart: removed at exit too. */
const keptDirs = new Set<string>();
let exitHookInstalled = false;
const signalHooked = new Set<NodeJS.Signals>();

function killGroupSync(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // group already gone; the leader alone, just in case
    try {
      process.kill(pid, signal);
    } catch {
      // already gone
    }
  }
}

/** Dead or a zombie (our child, not reaped yet): no thread of it can write any more. Linux. */
function isDeadSync(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return /\)\s+[ZX]\s/.test(stat);
  } catch {
    return true;
  }
}

function killAllSync(): void {
  for (const pid of live.keys()) killGroupSync(pid, "SIGKILL");
  // Remove the dirs only once the JVMs are really gone, else a dying one recreates files under
  // rmSync's feet. Bounded: this runs in 'exit' and signal handlers, synchronously.
  const deadline = Date.now() + 3_000;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  while (Date.now() < deadline && [...live.keys()].some((pid) => !isDeadSync(pid))) Atomics.wait(pause, 0, 0, 20);
  for (const dir of [...live.values(), ...keptDirs]) {
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 3, retryDelay: 50 });
    } catch {
      // best effort
    }
  }
  live.clear();
  keptDirs.clear();
}

function installSafetyNet(): void {
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.on("exit", killAllSync);
  }
  // The nodes are detached, so a Ctrl+C does not reach them. A listener disables Node's default
  // "terminate on signal"; this one runs first (prepended) and removes itself (for that signal
  // only: the other one stays caught). If another listener is left, that one owns the process's
  // fate (scripts/run-tests.mjs waits for its child and then stops the node; the redis harness
  // exits) and the 'exit' hook kills what is still alive; with none left, kill the nodes and
  // terminate as Node would have.
  for (const [signal, code] of [["SIGINT", 130], ["SIGTERM", 143]] as const) {
    if (signalHooked.has(signal)) continue;
    signalHooked.add(signal);
    const handler = () => {
      process.removeListener(signal, handler);
      signalHooked.delete(signal);
      if (process.listenerCount(signal) === 0) {
        killAllSync();
        process.exit(code);
      }
    };
    process.prependListener(signal, handler);
  }
}

// ---------------------------------------------------------------------------------------------
// Java and the jars
// ---------------------------------------------------------------------------------------------

function repoRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(path.join(dir, "scripts", "cassandra-fetch.sh"))) return dir;
    const up = path.dirname(dir);
    if (up === dir) throw new Error("cassandra harness: cannot find scripts/cassandra-fetch.sh above " + fileURLToPath(import.meta.url));
    dir = up;
  }
}

let java: Promise<string> | undefined;

/** The Java 17 to run Cassandra (and Maven's fetch) on: the lookup of scripts/prerequisites.mjs. */
function java17(): Promise<string> {
  java ??= (async () => {
    const prerequisites = (await import(pathToFileURL(path.join(repoRoot(), "scripts", "prerequisites.mjs")).href)) as { findJava17(): string | undefined };
    const found = prerequisites.findJava17();
    if (found === undefined) {
      const where = process.env.QIM_JAVA?.trim() ? `QIM_JAVA=${process.env.QIM_JAVA} is not Java 17` : "neither java on PATH nor any JVM under /usr/lib/jvm is Java 17";
      throw new Error(`cassandra harness: ${where}; Cassandra 5.0 needs Java 17: install openjdk-17-jre-headless or set QIM_JAVA`);
    }
    return found;
  })();
  return java;
}

let libDir: Promise<string> | undefined;

/**
 * The lib/ dir with the Cassandra jars: scripts/cassandra-fetch.sh prints it (at once when
 * cached, else after fetching; its progress goes to our stderr).
 */
function cassandraLib(javaBin: string): Promise<string> {
  libDir ??= new Promise<string>((resolve, reject) => {
    const script = path.join(repoRoot(), "scripts", "cassandra-fetch.sh");
    const child = spawn("bash", [script], { env: { ...process.env, QIM_JAVA: javaBin }, stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk: string) => (out += chunk));
    child.on("error", (err) => reject(new Error(`cassandra harness: cannot run ${script}: ${err.message}`)));
    child.on("close", (code, signal) => {
      const lib = out.trim().split("\n").pop()?.trim() ?? "";
      if (code !== 0 || lib === "") {
        reject(new Error(`cassandra harness: ${script} failed (${signal ?? `exit status ${code}`}); the Cassandra jars are needed to run these tests`));
      } else if (!existsSync(lib) || !readdirSync(lib).some((f) => /^cassandra-all-.*\.jar$/.test(f))) {
        reject(new Error(`cassandra harness: ${script} printed ${lib}, which holds no cassandra-all jar`));
      } else {
        resolve(lib);
      }
    });
  });
  // A failed fetch is not memoised: a later call tries again.
  libDir.catch(() => (libDir = undefined));
  return libDir;
}

// Cassandra's conf/jvm17-server.options needs these on Java 17.
const JVM17_MODULE_FLAGS = [
  "--add-exports", "java.base/jdk.internal.misc=ALL-UNNAMED",
  "--add-exports", "java.management.rmi/com.sun.jmx.remote.internal.rmi=ALL-UNNAMED",
  "--add-exports", "java.rmi/sun.rmi.registry=ALL-UNNAMED",
  "--add-exports", "java.rmi/sun.rmi.server=ALL-UNNAMED",
  "--add-exports", "java.sql/java.sql=ALL-UNNAMED",
  "--add-exports", "java.base/java.lang.ref=ALL-UNNAMED",
  "--add-exports", "jdk.unsupported/sun.misc=ALL-UNNAMED",
  "--add-exports", "jdk.compiler/com.sun.tools.javac.file=ALL-UNNAMED",
  "--add-exports", "jdk.attach/sun.tools.attach=ALL-UNNAMED",
  "--add-opens", "java.base/java.lang.module=ALL-UNNAMED",
  "--add-opens", "java.base/jdk.internal.loader=ALL-UNNAMED",
  "--add-opens", "java.base/jdk.internal.ref=ALL-UNNAMED",
  "--add-opens", "java.base/jdk.internal.reflect=ALL-UNNAMED",
  "--add-opens", "java.base/jdk.internal.math=ALL-UNNAMED",
  "--add-opens", "java.base/jdk.internal.module=ALL-UNNAMED",
  "--add-opens", "java.base/jdk.internal.util.jar=ALL-UNNAMED",
  "--add-opens", "jdk.management/com.sun.management.internal=ALL-UNNAMED",
  "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED",
  "--add-opens", "java.base/java.io=ALL-UNNAMED",
  "--add-opens", "java.base/java.lang.reflect=ALL-UNNAMED",
  "--add-opens", "jdk.compiler/com.sun.tools.javac=ALL-UNNAMED",
  "--add-opens", "java.base/java.lang=ALL-UNNAMED",
  "--add-opens", "java.base/java.util=ALL-UNNAMED",
];

// ---------------------------------------------------------------------------------------------
// Config files (our own, minimal)
// ---------------------------------------------------------------------------------------------

interface Ports {
  native: number;
  storage: number;
  jmx: number;
}

/** Where startOnce wrote the node's PEM key store and trust store (tls/ in its dir). */
interface TlsFiles {
  keystore: string;
  truststore: string;
  requireClientAuth: boolean;
}

function securityYaml(auth: boolean, tls: TlsFiles | undefined): string[] {
  const out: string[] = [];
  if (auth) {
    out.push(
      "authenticator: org.apache.cassandra.auth.PasswordAuthenticator",
      "authorizer: org.apache.cassandra.auth.CassandraAuthorizer",
      "role_manager: org.apache.cassandra.auth.CassandraRoleManager",
    );
  }
  if (tls) {
    out.push(
      "client_encryption_options:",
      "  enabled: true",
      "  optional: false",
      `  require_client_auth: ${tls.requireClientAuth}`,
      `  keystore: ${JSON.stringify(tls.keystore)}`,
      `  truststore: ${JSON.stringify(tls.truststore)}`,
      "  ssl_context_factory:",
      "    class_name: org.apache.cassandra.security.PEMBasedSslContextFactory",
    );
  }
  return out;
}

/** Where a node of a cluster listens and whom it asks first (startCassandraCluster); absent: the single node on 127.0.0.1. */
interface ClusterPlacement {
  host: string;
  /** "host:storage_port" of the seed (the first node). */
  seed: string;
}

function cassandraYaml(dir: string, ports: Ports, security: string[] = [], placement?: ClusterPlacement): string {
  const d = (name: string) => JSON.stringify(path.join(dir, "data", name));
  const host = placement?.host ?? HOST;
  return [
    `# Written by test/harness/cassandra.ts: a throwaway ${placement ? "node of a test cluster" : "single node"} on loopback.`,
    "cluster_name: qim-test",
    "num_tokens: 1",
    "partitioner: org.apache.cassandra.dht.Murmur3Partitioner",
    "endpoint_snitch: SimpleSnitch",
    "commitlog_sync: periodic",
    "commitlog_sync_period: 10000ms",
    "seed_provider:",
    "  - class_name: org.apache.cassandra.locator.SimpleSeedProvider",
    "    parameters:",
    `      - seeds: "${placement?.seed ?? `${HOST}:${ports.storage}`}"`,
    `listen_address: ${host}`,
    `rpc_address: ${host}`,
    // a fresh test cluster holds no data to stream: every node takes its initial_token and joins
    ...(placement ? ["auto_bootstrap: false"] : []),
    `storage_port: ${ports.storage}`,
    "start_native_transport: true",
    `native_transport_port: ${ports.native}`,
    "data_file_directories:",
    `  - ${d("data")}`,
    `commitlog_directory: ${d("commitlog")}`,
    `saved_caches_directory: ${d("saved_caches")}`,
    `hints_directory: ${d("hints")}`,
    `cdc_raw_directory: ${d("cdc_raw")}`,
    // Tests drop and truncate a lot; no snapshot for each.
    "auto_snapshot: false",
    ...security,
    "",
  ].join("\n");
}

function logbackXml(dir: string): string {
  const file = path.join(dir, "logs", "system.log").replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/"/g, "&quot;");
  return `<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by test/harness/cassandra.ts: INFO and up to logs/system.log, nothing on the console. -->
<configuration scan="false">
  <appender name="FILE" class="ch.qos.logback.core.FileAppender">
    <file>${file}</file>
    <encoder>
      <pattern>%-5level [%thread] %date{ISO8601} %logger{36}:%line - %msg%n</pattern>
    </encoder>
  </appender>
  <root level="INFO">
    <appender-ref ref="FILE"/>
  </root>
</configuration>
`;
}

// ---------------------------------------------------------------------------------------------
// CQL probes
// ---------------------------------------------------------------------------------------------

function tcpOpen(host: string, port: number, timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect({ host, port });
    const done = (ok: boolean) => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(timeoutMs, () => done(false));
    sock.once("connect", () => done(true));
    sock.once("error", () => done(false));
  });
}

/** One real CQL round trip; resolves release_version or rejects. */
async function queryReleaseVersion(contactPoint: string, localDataCenter: string, extra: Pick<cassandra.ClientOptions, "credentials" | "sslOptions"> = {}): Promise<string> {
  const client = new cassandra.Client({
    contactPoints: [contactPoint],
    localDataCenter,
    socketOptions: { connectTimeout: 5_000, readTimeout: 10_000 },
    protocolOptions: { ...PROTOCOL_OPTIONS },
    ...extra,
  });
  try {
    await client.connect();
    const rs = await client.execute("SELECT release_version FROM system.local");
    const v = rs.first()?.get("release_version");
    if (typeof v !== "string") throw new Error("system.local has no release_version");
    return v;
  } finally {
    await client.shutdown().catch(() => {});
  }
}

async function logTail(dir: string): Promise<string> {
  const parts: string[] = [];
  for (const name of ["stdout.log", "system.log"]) {
    try {
      const text = await readFile(path.join(dir, "logs", name), "utf8");
      const lines = text.trimEnd().split("\n");
      if (text.trim() !== "") parts.push(`--- logs/${name} (last ${Math.min(LOG_TAIL_LINES, lines.length)} lines) ---\n${lines.slice(-LOG_TAIL_LINES).join("\n")}`);
    } catch {
      // not written
    }
  }
  return parts.length ? parts.join("\n") : "(no log written)";
}

// ---------------------------------------------------------------------------------------------
// Start / stop
// ---------------------------------------------------------------------------------------------

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

class StartError extends Error {
  constructor(message: string, readonly portClash: boolean) {
    super(message);
  }
}

function waitExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const t = setTimeout(() => {
      child.off("exit", onExit);
      resolve(false);
    }, ms);
    const onExit = () => {
      clearTimeout(t);
      resolve(true);
    };
    child.once("exit", onExit);
  });
}

/**
 * Writes the node's PEM stores under dir/tls: the key store is the private key as PKCS#8 (the
 * only form PEMBasedSslContextFactory reads; certs/pki.ts emits PKCS#1) followed by the
 * certificate; the trust store is the CA.
 */
async function writeTlsFiles(dir: string, tls: CassandraTlsOptions): Promise<TlsFiles> {
  const tlsDir = path.join(dir, "tls");
  await mkdir(tlsDir, { recursive: true, mode: 0o700 });
  const pkcs8 = createPrivateKey(tls.keyPem).export({ type: "pkcs8", format: "pem" }) as string;
  const keystore = path.join(tlsDir, "keystore.pem");
  const truststore = path.join(tlsDir, "truststore.pem");
  await writeFile(keystore, `${pkcs8.trimEnd()}\n${tls.certPem.trimEnd()}\n`, { mode: 0o600 });
  await writeFile(truststore, `${(tls.caPem ?? tls.certPem).trimEnd()}\n`);
  return { keystore, truststore, requireClientAuth: tls.requireClientAuth === true };
}

/** The options of the harness's own connections to a node started with these options. */
function harnessClientSecurity(opts: StartCassandraOptions): Pick<cassandra.ClientOptions, "credentials" | "sslOptions"> {
  const out: Pick<cassandra.ClientOptions, "credentials" | "sslOptions"> = {};
  if (opts.auth) out.credentials = { ...SUPERUSER };
  if (opts.tls) {
    out.sslOptions = {
      ca: opts.tls.caPem ?? opts.tls.certPem,
      rejectUnauthorized: true,
      ...(opts.tls.probe ? { cert: opts.tls.probe.certPem, key: opts.tls.probe.keyPem } : {}),
    };
  }
  return out;
}

/** The JVM command line of one node (the single node's initial token is 0; a cluster's are spread over the ring). */
function jvmArgs(lib: string, dir: string, heapMb: number, ports: Ports, node: { auth: boolean; initialToken: string; unsafeSystem: boolean; extra?: string[] }): string[] {
  const jamm = readdirSync(lib).find((f) => /^jamm-.*\.jar$/.test(f));
  const yamlPath = path.join(dir, "cassandra.yaml");
  const logbackPath = path.join(dir, "logback.xml");
  return [
    `-Xms${Math.min(256, heapMb)}m`,
    `-Xmx${heapMb}m`,
    ...JVM17_MODULE_FLAGS,
    "-Dio.netty.tryReflectionSetAccessible=true",
    "-Djdk.attach.allowAttachSelf=true",
    ...(jamm ? [`-javaagent:${path.join(lib, jamm)}`] : []),
    "-XX:+ExitOnOutOfMemoryError",
    `-XX:ErrorFile=${path.join(dir, "logs", "hs_err_%p.log")}`,
    "-Dcassandra-foreground=yes",
    `-Dcassandra.config=file://${yamlPath}`,
    `-Dcassandra.storagedir=${path.join(dir, "data")}`,
    `-Dcassandra.logdir=${path.join(dir, "logs")}`,
    `-Dcassandra.triggers_dir=${path.join(dir, "triggers")}`,
    `-Dcassandra.jmx.local.port=${ports.jmx}`,
    "-Dcassandra.skip_wait_for_gossip_to_settle=0",
    `-Dcassandra.initial_token=${node.initialToken}`,
    ...(node.extra ?? []),
    // system tables without the commit log: fast, and lost on a SIGKILL (a cluster node keeps them)
    ...(node.unsafeSystem ? ["-Dcassandra.unsafesystem=true"] : []),
    "-Dcassandra.shutdown_announce_in_ms=0",
    // CassandraRoleManager waits 10 s by default before creating the default superuser
    ...(node.auth ? ["-Dcassandra.superuser_setup_delay_ms=0"] : []),
    `-Dlogback.configurationFile=${logbackPath}`,
    "-cp",
    `${lib}/*`,
    "org.apache.cassandra.service.CassandraDaemon",
  ];
}

async function startOnce(javaBin: string, lib: string, heapMb: number, opts: StartCassandraOptions): Promise<CassandraNode> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "qim-cassandra-"));
  const ports: Ports = { native: await freePort(), storage: await freePort(), jmx: await freePort() };
  for (const sub of ["logs", "triggers", "data"]) await mkdir(path.join(dir, sub), { recursive: true });
  const yamlPath = path.join(dir, "cassandra.yaml");
  const logbackPath = path.join(dir, "logback.xml");
  const tlsFiles = opts.tls ? await writeTlsFiles(dir, opts.tls) : undefined;
  await writeFile(yamlPath, cassandraYaml(dir, ports, securityYaml(opts.auth === true, tlsFiles)));
  await writeFile(logbackPath, logbackXml(dir));

  const args = jvmArgs(lib, dir, heapMb, ports, { auth: opts.auth === true, initialToken: "0", unsafeSystem: true });

  installSafetyNet();
  const out = openSync(path.join(dir, "logs", "stdout.log"), "a");
  let child: ChildProcess;
  try {
    child = spawn(javaBin, args, { cwd: dir, detached: true, stdio: ["ignore", out, out] });
  } finally {
    closeSync(out);
  }
  // Never keeps the event loop alive by itself; the 'exit' hook kills it if still running.
  child.unref();
  const pid = await new Promise<number>((resolve, reject) => {
    child.once("spawn", () => resolve(child.pid!));
    child.once("error", reject);
  }).catch(async (err: Error) => {
    await rm(dir, { recursive: true, force: true });
    throw new StartError(`cassandra harness: cannot run ${javaBin}: ${err.message}`, false);
  });
  child.on("error", () => {}); // after spawn: only kill() failures, which stop() handles
  live.set(pid, dir);

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      killGroupSync(pid, "SIGTERM");
      if (!(await waitExit(child, STOP_GRACE_MS))) {
        killGroupSync(pid, "SIGKILL");
        await waitExit(child, 5_000);
      }
      live.delete(pid);
      await rm(dir, { recursive: true, force: true, maxRetries: 3, retryDelay: 100 });
    })();
    return stopping;
  };

  const contactPoint = `${HOST}:${ports.native}`;
  const security = harnessClientSecurity(opts);
  const clientOptions = () => ({ contactPoints: [contactPoint], localDataCenter: LOCAL_DC, protocolOptions: { ...PROTOCOL_OPTIONS }, ...security });
  const exited = () => child.exitCode !== null || child.signalCode !== null;
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let lastError = "";
  for (;;) {
    if (exited()) {
      const tail = await logTail(dir);
      const how = child.signalCode ?? `status ${child.exitCode}`;
      await stop();
      throw new StartError(`cassandra harness: the Cassandra JVM (pid ${pid}) exited (${how}) before answering CQL on ${contactPoint}\n${tail}`, /Address already in use|BindException/i.test(tail));
    }
    if (Date.now() > deadline) {
      const tail = await logTail(dir);
      await stop();
      throw new StartError(`cassandra harness: Cassandra (pid ${pid}) did not answer CQL on ${contactPoint} within ${READY_TIMEOUT_MS / 1000} s${lastError ? ` (last error: ${lastError})` : ""}\n${tail}`, false);
    }
    if (await tcpOpen(HOST, ports.native)) {
      try {
        // with auth this also waits for the default superuser, which the node creates after start
        const version = await queryReleaseVersion(contactPoint, LOCAL_DC, security);
        return { host: HOST, port: ports.native, contactPoint, localDataCenter: LOCAL_DC, version, pid, dir, stop, clientOptions };
      } catch (err) {
        lastError = (err as Error).message;
      }
    }
    await sleep(POLL_MS);
  }
}

/**
 * Starts a single-node Cassandra on free loopback ports in a fresh temp dir and resolves once it
 * answers CQL (at most 180 s; rejects early, with the tail of its logs, if the JVM exits).
 * Fetches the jars first if they are not cached. Retries with new ports if one was taken
 * between picking and binding it. With `auth` and/or `tls`, the readiness check logs in as the
 * superuser and verifies the node's certificate (presenting tls.probe), so ready also means
 * that the superuser exists and the TLS configuration works.
 */
export async function startCassandra(opts: StartCassandraOptions = {}): Promise<CassandraNode> {
  const heapMb = opts.heapMb ?? 512;
  if (!Number.isInteger(heapMb) || heapMb < 128) throw new Error(`startCassandra: heapMb must be an integer >= 128, got ${heapMb}`);
  if (opts.tls?.requireClientAuth && !opts.tls.probe) throw new Error("startCassandra: tls.requireClientAuth needs tls.probe, the client certificate of the harness's own connections");
  const javaBin = await java17();
  const lib = await cassandraLib(javaBin);
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(javaBin, lib, heapMb, opts);
    } catch (err) {
      if (!(err instanceof StartError) || !err.portClash || attempt >= START_ATTEMPTS) throw err;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Shared node, keyspaces
// ---------------------------------------------------------------------------------------------

let shared: Promise<SharedCassandra> | undefined;

function testCassandraAddr(s: string): { host: string; port: number } {
  const hp = parseHostPort(s);
  if (!hp) throw new Error(`QIM_TEST_CASSANDRA must be "host:port", got "${s}"`);
  return hp;
}

/**
 * The Cassandra the tests of this process share (isolate by keyspace: uniqueKeyspace()).
 * With QIM_TEST_CASSANDRA="host:port" (scripts/run-tests.mjs sets it) that one, after checking
 * that it answers CQL; otherwise one node started in this process on first call, killed when the
 * process exits (see the safety net above).
 */
export function sharedCassandra(): Promise<SharedCassandra> {
  shared ??= (async () => {
    const env = process.env.QIM_TEST_CASSANDRA;
    if (env !== undefined && env.trim() !== "") {
      const { host, port } = testCassandraAddr(env);
      const contactPoint = `${host}:${port}`;
      let lastError = "";
      for (let attempt = 0; attempt < 5; attempt++) {
        if (attempt > 0) await sleep(1_000);
        try {
          await queryReleaseVersion(contactPoint, LOCAL_DC);
          return { contactPoint, localDataCenter: LOCAL_DC };
        } catch (err) {
          lastError = (err as Error).message;
        }
      }
      throw new Error(`QIM_TEST_CASSANDRA=${env}: no CQL answer from ${contactPoint} (${lastError})`);
    }
    const node = await startCassandra();
    return { contactPoint: node.contactPoint, localDataCenter: node.localDataCenter };
  })();
  return shared;
}

let keyspaceCounter = 0;

/**
 * A valid, unquoted CQL keyspace name (lower case, [a-z][a-z0-9_]*, at most 48 chars) starting
 * with the sanitised prefix, unique per call across processes (pid, counter, random).
 */
export function uniqueKeyspace(prefix: string): string {
  keyspaceCounter++;
  const rand = Math.floor(Math.random() * 36 ** 4).toString(36).padStart(4, "0");
  const suffix = `_${process.pid.toString(36)}_${keyspaceCounter.toString(36)}_${rand}`;
  let p = prefix.toLowerCase().replace(/[^a-z0-9_]+/g, "_").replace(/^_+|_+$/g, "");
  if (!/^[a-z]/.test(p)) p = `ks${p === "" ? "" : "_"}${p}`;
  p = p.slice(0, 48 - suffix.length).replace(/_+$/, "");
  return p + suffix;
}

// ---------------------------------------------------------------------------------------------
// A cluster of real nodes (startCassandraCluster)
// ---------------------------------------------------------------------------------------------

/** Murmur3 tokens spread evenly over the ring, one per node (num_tokens 1). */
function evenTokens(n: number): string[] {
  const span = 2n ** 64n;
  return Array.from({ length: n }, (_, i) => (-(2n ** 63n) + (span * BigInt(i)) / BigInt(n)).toString());
}

/** A port free on every one of `hosts` (the nodes listen on the same ports, each on its own address). */
async function portFreeOn(hosts: readonly string[]): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await freePort();
    const ok = await Promise.all(hosts.map((host) => new Promise<boolean>((resolve) => {
      const srv = net.createServer();
      srv.once("error", () => resolve(false));
      srv.listen({ host, port, exclusive: true }, () => srv.close(() => resolve(true)));
    })));
    if (ok.every(Boolean)) return port;
  }
  throw new Error(`cassandra harness: no port free on all of ${hosts.join(", ")}`);
}

export interface CassandraClusterNode {
  /** 0-based index in the cluster; node i listens on 127.0.0.(i+1). */
  readonly index: number;
  readonly host: string;
  /** "127.0.0.N:PORT" (the native port is the same on every node). */
  readonly contactPoint: string;
  /** pid of the JVM running now (changes on restart); 0 while it is down. */
  readonly pid: number;
  readonly dir: string;
  readonly up: boolean;
}

export interface CassandraCluster {
  readonly nodes: readonly CassandraClusterNode[];
  /** Every node's contact point, in order. */
  readonly contactPoints: string[];
  readonly localDataCenter: "datacenter1";
  readonly nativePort: number;
  readonly version: string;
  /** Driver options for a test's own client of the whole cluster. */
  clientOptions(): Pick<cassandra.ClientOptions, "contactPoints" | "localDataCenter" | "protocolOptions">;
  /** SIGKILL to node i's process group (no flush, no announcement); its data dir stays for restart(). Resolves once it is dead. */
  kill(i: number): Promise<void>;
  /** SIGTERM to node i (SIGKILL after 20 s); its data dir stays for restart(). */
  stopNode(i: number): Promise<void>;
  /**
   * Starts node i again on its data dir (same address, ports and tokens) and resolves once it
   * answers CQL and every running node sees every running node up (see waitRing).
   */
  restart(i: number): Promise<void>;
  /**
   * Resolves once every running node answers CQL as a coordinator of a read at consistency ALL
   * of a probe keyspace replicated to every node: the node itself and each other running node
   * are up in its view (what `nodetool status` shows as UN). Only when all nodes run.
   */
  waitRing(): Promise<void>;
  /** Stops every node (SIGTERM, SIGKILL after 20 s) and removes the dirs. Idempotent. */
  stop(): Promise<void>;
}

export interface StartCassandraClusterOptions {
  /** Max heap of each node in MiB; default 512. */
  heapMb?: number;
}

const CLUSTER_PROBE_KEYSPACE = "qim_harness_ring";

/**
 * Starts an `n`-node Cassandra cluster (1 ≤ n ≤ 9) from the same jars: node i on 127.0.0.(i+1),
 * the same native and storage ports on each address (JMX on its own port, 127.0.0.1 only), each
 * its own temp dir, seeds = the first node, SimpleSnitch (one data center, `datacenter1`), one
 * token each spread over the ring, auto_bootstrap off (a fresh cluster has nothing to stream).
 * The nodes start one after another (2 cores), each once the previous one is in the ring; then
 * waitRing() checks every node sees all up. A start that fails stops what started and rejects
 * with the tail of the failing node's logs (no retry here: a flaky start must show).
 */
export async function startCassandraCluster(n: number, opts: StartCassandraClusterOptions = {}): Promise<CassandraCluster> {
  if (!Number.isInteger(n) || n < 1 || n > 9) throw new Error(`startCassandraCluster: n must be 1..9, got ${n}`);
  const heapMb = opts.heapMb ?? 512;
  if (!Number.isInteger(heapMb) || heapMb < 128) throw new Error(`startCassandraCluster: heapMb must be an integer >= 128, got ${heapMb}`);
  const javaBin = await java17();
  const lib = await cassandraLib(javaBin);
  const hosts = Array.from({ length: n }, (_, i) => `127.0.0.${i + 1}`);
  const nativePort = await portFreeOn(hosts);
  const storagePort = await portFreeOn(hosts);
  const tokens = evenTokens(n);
  const seed = `${hosts[0]}:${storagePort}`;
  installSafetyNet();

  interface State { index: number; host: string; dir: string; ports: Ports; child: ChildProcess | null; pid: number }
  const states: State[] = [];
  for (let i = 0; i < n; i++) {
    const dir = await mkdtemp(path.join(os.tmpdir(), `qim-cassandra-n${i + 1}-`));
    keptDirs.add(dir);
    for (const sub of ["logs", "triggers", "data"]) await mkdir(path.join(dir, sub), { recursive: true });
    const ports: Ports = { native: nativePort, storage: storagePort, jmx: await freePort() };
    await writeFile(path.join(dir, "cassandra.yaml"), cassandraYaml(dir, ports, [], { host: hosts[i]!, seed }));
    await writeFile(path.join(dir, "logback.xml"), logbackXml(dir));
    states.push({ index: i, host: hosts[i]!, dir, ports, child: null, pid: 0 });
  }
  const contactPoints = states.map((s) => `${s.host}:${nativePort}`);
  const isUp = (s: State) => s.child !== null && s.child.exitCode === null && s.child.signalCode === null;

  const spawnNode = async (s: State): Promise<void> => {
    const args = jvmArgs(lib, s.dir, heapMb, s.ports, {
      // the schema (system tables) must survive kill(): unsafesystem off
      auth: false, initialToken: tokens[s.index]!, unsafeSystem: false,
      // the gossip round a joining node waits for (30 s by default) is for real networks
      extra: ["-Dcassandra.ring_delay_ms=1000"],
    });
    const out = openSync(path.join(s.dir, "logs", "stdout.log"), "a");
    let child: ChildProcess;
    try {
      child = spawn(javaBin, args, { cwd: s.dir, detached: true, stdio: ["ignore", out, out] });
    } finally {
      closeSync(out);
    }
    child.unref();
    s.pid = await new Promise<number>((resolve, reject) => {
      child.once("spawn", () => resolve(child.pid!));
      child.once("error", reject);
    });
    child.on("error", () => {});
    s.child = child;
    keptDirs.delete(s.dir);
    live.set(s.pid, s.dir);
  };

  /** Waits until node s answers CQL on its own address (rejecting with its log tail if it exits or takes too long). */
  const waitCql = async (s: State): Promise<string> => {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    let lastError = "";
    for (;;) {
      if (!isUp(s)) {
        throw new Error(`cassandra harness: node ${s.index + 1} (${s.host}, pid ${s.pid}) exited (${s.child?.signalCode ?? `status ${s.child?.exitCode}`}) before answering CQL\n${await logTail(s.dir)}`);
      }
      if (Date.now() > deadline) {
        throw new Error(`cassandra harness: node ${s.index + 1} (${s.host}) did not answer CQL within ${READY_TIMEOUT_MS / 1000} s${lastError ? ` (last error: ${lastError})` : ""}\n${await logTail(s.dir)}`);
      }
      if (await tcpOpen(s.host, nativePort)) {
        try {
          return await queryReleaseVersion(`${s.host}:${nativePort}`, LOCAL_DC);
        } catch (err) {
          lastError = (err as Error).message;
        }
      }
      await sleep(POLL_MS);
    }
  };

  /** One statement on node s alone as coordinator (a whitelist of one host). */
  const onNode = async <T>(s: State, work: (client: cassandra.Client) => Promise<T>): Promise<T> => {
    const client = new cassandra.Client({
      contactPoints: [`${s.host}:${nativePort}`], localDataCenter: LOCAL_DC, protocolOptions: { ...PROTOCOL_OPTIONS, port: nativePort },
      socketOptions: { connectTimeout: 5_000, readTimeout: 10_000 },
      policies: { loadBalancing: new cassandra.policies.loadBalancing.WhiteListPolicy(new cassandra.policies.loadBalancing.RoundRobinPolicy(), [`${s.host}:${nativePort}`]) },
    });
    try {
      await client.connect();
      return await work(client);
    } finally {
      await client.shutdown().catch(() => {});
    }
  };

  /** Node s's view: the peers it knows with tokens (gossip state NORMAL). */
  const peersOf = (s: State) => onNode(s, async (c) => {
    const rs = await c.execute("SELECT peer, tokens FROM system.peers_v2");
    return new Set(rs.rows.filter((r) => r.tokens != null).map((r) => String(r.peer)));
  });

  /** Until every running node lists every other running node as a peer with tokens. */
  const waitPeers = async (): Promise<void> => {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    let last = "";
    for (;;) {
      const running = states.filter(isUp);
      try {
        const views = await Promise.all(running.map(async (s) => ({ s, peers: await peersOf(s) })));
        const missing = views.flatMap(({ s, peers }) => running.filter((o) => o !== s && !peers.has(o.host)).map((o) => `${s.host} does not list ${o.host}`));
        if (missing.length === 0) return;
        last = missing.join("; ");
      } catch (err) {
        last = (err as Error).message;
      }
      if (Date.now() > deadline) throw new Error(`cassandra harness: the ring did not form within ${READY_TIMEOUT_MS / 1000} s (${last})`);
      await sleep(POLL_MS);
    }
  };

  const waitRing = async (): Promise<void> => {
    await waitPeers();
    if (!states.every(isUp)) return;
    const deadline = Date.now() + READY_TIMEOUT_MS;
    let last = "";
    for (;;) {
      try {
        await onNode(states[0]!, async (c) => {
          await c.execute(`CREATE KEYSPACE IF NOT EXISTS ${CLUSTER_PROBE_KEYSPACE} WITH replication = {'class': 'SimpleStrategy', 'replication_factor': ${n}}`);
          await c.execute(`CREATE TABLE IF NOT EXISTS ${CLUSTER_PROBE_KEYSPACE}.probe (k int PRIMARY KEY, v int)`);
        });
        // ALL: the coordinator must see every replica, i.e. every node, up
        for (const s of states) {
          await onNode(s, (c) => c.execute(`SELECT v FROM ${CLUSTER_PROBE_KEYSPACE}.probe WHERE k = 0`, [], { consistency: cassandra.types.consistencies.all }));
        }
        return;
      } catch (err) {
        last = (err as Error).message.split("\n")[0]!;
      }
      if (Date.now() > deadline) throw new Error(`cassandra harness: not every node saw every node up within ${READY_TIMEOUT_MS / 1000} s (${last})`);
      await sleep(POLL_MS);
    }
  };

  const downNode = async (s: State, signal: "SIGKILL" | "SIGTERM"): Promise<void> => {
    const child = s.child;
    if (child === null) return;
    killGroupSync(s.pid, signal);
    if (!(await waitExit(child, signal === "SIGKILL" ? 10_000 : STOP_GRACE_MS))) {
      killGroupSync(s.pid, "SIGKILL");
      await waitExit(child, 5_000);
    }
    live.delete(s.pid);
    keptDirs.add(s.dir);
    s.child = null;
    s.pid = 0;
  };

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      await Promise.all(states.map((s) => downNode(s, "SIGTERM")));
      for (const s of states) {
        keptDirs.delete(s.dir);
        await rm(s.dir, { recursive: true, force: true, maxRetries: 3, retryDelay: 100 });
      }
    })();
    return stopping;
  };

  const at = (i: number): State => {
    const s = states[i];
    if (!s) throw new Error(`cassandra harness: no node ${i} (0..${n - 1})`);
    return s;
  };

  let version = "";
  try {
    for (const s of states) {
      await spawnNode(s);
      version = await waitCql(s);
      await waitPeers();
    }
    await waitRing();
  } catch (err) {
    await stop();
    throw err;
  }

  const view = (s: State): CassandraClusterNode => ({
    index: s.index, host: s.host, contactPoint: `${s.host}:${nativePort}`, dir: s.dir,
    get pid() { return s.pid; },
    get up() { return isUp(s); },
  });
  return {
    nodes: states.map(view),
    contactPoints,
    localDataCenter: LOCAL_DC,
    nativePort,
    version,
    clientOptions: () => ({ contactPoints: [...contactPoints], localDataCenter: LOCAL_DC, protocolOptions: { ...PROTOCOL_OPTIONS, port: nativePort } }),
    kill: (i) => downNode(at(i), "SIGKILL"),
    stopNode: (i) => downNode(at(i), "SIGTERM"),
    restart: async (i) => {
      const s = at(i);
      if (isUp(s)) throw new Error(`cassandra harness: node ${i + 1} is running; kill or stop it first`);
      await spawnNode(s);
      await waitCql(s);
      await waitRing();
    },
    waitRing,
    stop,
  };
}
