/**
 * The real `bin/qim-admin-server.js` as a CHILD process, for tests that kill it, restart it, send
 * it signals or change its deny list under it. Loopback only; stopped by pid; a process-wide
 * 'exit' hook SIGKILLs any left alive so that an aborted run leaves no server behind.
 */
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { SERVER_NODE_FLAGS } from "../../server/node-flags.js";
import type { TestPkiFiles } from "../certs/fixture.js";
import { baseEnv, ROOT } from "../e2e/qimctl.js";
import { freePort } from "../harness/redis.js";

export const ADMIN_SERVER = path.join(ROOT, "bin", "qim-admin-server.js");

const live = new Set<ChildProcess>();
let hooked = false;
function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.on("exit", () => {
    for (const c of live) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  });
}

export interface ServerProcessOptions {
  /** host:port of a plain Redis; or `redisArgs`, the connection flags of a secured one. */
  redisAddr?: string;
  redisArgs?: string[];
  pki: TestPkiFiles;
  auditLog: string;
  /** A config file (--config); with `bare`, the server gets nothing but it (the file names listen, TLS, audit, Redis). */
  configPath?: string;
  bare?: boolean;
  /** Default: a free port. Pass the previous one to restart "the same" server. */
  port?: number;
  denyList?: string;
  /** QIM_FAILPOINTS of the child (unset when absent). */
  failpoints?: string;
  /** --metrics-listen (default off), e.g. 127.0.0.1:0; the bound address is `metricsUrl`. */
  metricsListen?: string;
  /** Runs the server under `ulimit -f` of this many KiB (every file it writes, the audit log included). */
  fileSizeLimitKiB?: number;
  /** More flags, after the ones above (a node id, the node service's listener and certificate, …). */
  extraArgs?: string[];
  /**
   * Instead of bin/qim-admin-server.js and its flags: node's arguments for another program that
   * starts an admin server and logs as it does (test/cluster/node-child.ts); `port` is passed to it.
   */
  childArgs?: (port: number) => string[];
  /** node's flags before the script (default SERVER_NODE_FLAGS, what bin/qim-admin-server.js's first line gives node). */
  nodeFlags?: readonly string[];
}

export interface ServerProcess {
  port: number;
  /** localhost:PORT — the name the test server certificate carries. */
  endpoint: string;
  /** http://HOST:PORT/metrics as the server logged it; null with metrics off. */
  metricsUrl: string | null;
  pid: number;
  /** Everything the server wrote to stderr so far (its log). */
  log(): string;
  /** Resolves when a log line matches `re` (already there or to come); rejects after `timeoutMs` or on exit. */
  waitForLog(re: RegExp, timeoutMs?: number, from?: number): Promise<string>;
  /** How the process ended (resolves once it has). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  signal(sig: NodeJS.Signals): void;
  /** SIGTERM (clean shutdown), SIGKILL after 5 s; idempotent. */
  stop(): Promise<void>;
}

export async function startServerProcess(opts: ServerProcessOptions): Promise<ServerProcess> {
  hookExit();
  const port = opts.port ?? (await freePort());
  // node's flags as bin/qim-admin-server.js's first line gives them: the server as it ships
  // QIM_PROFILE_SERVER=DIR: each server writes a CPU profile there when it stops (node's --cpu-prof,
  // which NODE_OPTIONS may not carry): how a bench's server is profiled
  const profile = process.env.QIM_PROFILE_SERVER ? ["--cpu-prof", `--cpu-prof-dir=${process.env.QIM_PROFILE_SERVER}`] : [];
  const args = [...profile, ...(opts.nodeFlags ?? SERVER_NODE_FLAGS), ...(opts.childArgs ? opts.childArgs(port) : opts.bare ? [ADMIN_SERVER, "--config", opts.configPath!] : [
    ADMIN_SERVER,
    ...(opts.configPath ? ["--config", opts.configPath] : []),
    "--listen", `127.0.0.1:${port}`,
    "--metrics-listen", opts.metricsListen ?? "off",
    "--tls-ca", opts.pki.ca.certPath,
    "--tls-cert", opts.pki.server.certPath,
    "--tls-key", opts.pki.server.keyPath,
    "--audit-log", opts.auditLog,
    ...(opts.redisArgs ?? ["--redis", opts.redisAddr!]),
    ...(opts.denyList ? ["--deny-list", opts.denyList] : []),
    ...(opts.extraArgs ?? []),
  ])];
  const env = { ...baseEnv, ...(opts.failpoints ? { QIM_FAILPOINTS: opts.failpoints } : {}) };
  // under a file size limit, bash sets it and execs node in its place (the same pid)
  const child = opts.fileSizeLimitKiB === undefined
    ? spawn(process.execPath, args, { cwd: ROOT, env, stdio: ["ignore", "ignore", "pipe"] })
    : spawn("bash", ["-c", `ulimit -f ${opts.fileSizeLimitKiB} && exec "$0" "$@"`, process.execPath, ...args], { cwd: ROOT, env, stdio: ["ignore", "ignore", "pipe"] });
  live.add(child);
  let text = "";
  const waiters = new Set<() => void>();
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (chunk: string) => {
    text += chunk;
    for (const w of [...waiters]) w();
  });
  let ended = false;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once("exit", (code, signal) => {
      ended = true;
      live.delete(child);
      resolve({ code, signal });
      for (const w of [...waiters]) w();
    });
  });

  const waitForLog = (re: RegExp, timeoutMs = 20_000, from = 0) => new Promise<string>((resolve, reject) => {
    const check = () => {
      const m = text.slice(from).split("\n").find((l) => re.test(l));
      if (m !== undefined) {
        done();
        resolve(m);
      } else if (ended) {
        done();
        reject(new Error(`the server exited before logging ${re}; its log:\n${text}`));
      }
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`no log line ${re} within ${timeoutMs} ms; the server's log:\n${text}`));
    }, timeoutMs);
    const done = () => {
      clearTimeout(timer);
      waiters.delete(check);
    };
    waiters.add(check);
    check();
  });

  const proc: ServerProcess = {
    port,
    endpoint: `localhost:${port}`,
    metricsUrl: null,
    pid: child.pid!,
    log: () => text,
    waitForLog,
    exited,
    signal: (sig) => {
      if (!ended) child.kill(sig);
    },
    stop: async () => {
      if (ended) return;
      child.kill("SIGTERM");
      const t = setTimeout(() => child.kill("SIGKILL"), 5000);
      await exited;
      clearTimeout(t);
    },
  };
  try {
    const listening = await waitForLog(/qim admin server listening on /, 30_000);
    proc.metricsUrl = /metrics on (http:\/\/\S+\/metrics)/.exec(listening)?.[1] ?? null;
  } catch (err) {
    await proc.stop();
    throw err;
  }
  return proc;
}
