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
  for (const dir of live.values()) {
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 3, retryDelay: 50 });
    } catch {
      // best effort
    }
  }
  live.clear();
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

function cassandraYaml(dir: string, ports: Ports, security: string[] = []): string {
  const d = (name: string) => JSON.stringify(path.join(dir, "data", name));
  return [
    "# Written by test/harness/cassandra.ts: a throwaway single node on loopback.",
    "cluster_name: qim-test",
    "num_tokens: 1",
    "partitioner: org.apache.cassandra.dht.Murmur3Partitioner",
    "endpoint_snitch: SimpleSnitch",
    "commitlog_sync: periodic",
    "commitlog_sync_period: 10000ms",
    "seed_provider:",
    "  - class_name: org.apache.cassandra.locator.SimpleSeedProvider",
    "    parameters:",
    `      - seeds: "${HOST}:${ports.storage}"`,
    `listen_address: ${HOST}`,
    `rpc_address: ${HOST}`,
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

async function startOnce(javaBin: string, lib: string, heapMb: number, opts: StartCassandraOptions): Promise<CassandraNode> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "qim-cassandra-"));
  const ports: Ports = { native: await freePort(), storage: await freePort(), jmx: await freePort() };
  for (const sub of ["logs", "triggers", "data"]) await mkdir(path.join(dir, sub), { recursive: true });
  const yamlPath = path.join(dir, "cassandra.yaml");
  const logbackPath = path.join(dir, "logback.xml");
  const tlsFiles = opts.tls ? await writeTlsFiles(dir, opts.tls) : undefined;
  await writeFile(yamlPath, cassandraYaml(dir, ports, securityYaml(opts.auth === true, tlsFiles)));
  await writeFile(logbackPath, logbackXml(dir));

  const jamm = readdirSync(lib).find((f) => /^jamm-.*\.jar$/.test(f));
  const args = [
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
    "-Dcassandra.initial_token=0",
    "-Dcassandra.unsafesystem=true",
    "-Dcassandra.shutdown_announce_in_ms=0",
    // CassandraRoleManager waits 10 s by default before creating the default superuser
    ...(opts.auth ? ["-Dcassandra.superuser_setup_delay_ms=0"] : []),
    `-Dlogback.configurationFile=${logbackPath}`,
    "-cp",
    `${lib}/*`,
    "org.apache.cassandra.service.CassandraDaemon",
  ];

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
