/**
 * Process plumbing of the development stack (`qimctl dev up|status|down`, `qimctl demo`): finding
 * `redis-server`, free loopback ports, "is this pid alive, and is it still ours", stopping a
 * process we are not the parent of, and the two "does it answer" probes (Redis PING over a raw
 * socket, in plaintext or over TLS after AUTH; grpc.health.v1 over mTLS). No engine import;
 * grpc-js is imported lazily.
 */
import { execFile } from "node:child_process";
import { accessSync, constants, readdirSync, readFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { connect as tlsConnect } from "node:tls";

export const LOOPBACK = "127.0.0.1";

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
export { sleep };

/** The first executable `name` on PATH, or null. */
export function findOnPath(name: string, env: NodeJS.ProcessEnv = process.env): string | null {
  for (const dir of (env.PATH ?? "").split(path.delimiter)) {
    if (dir === "") continue;
    const file = path.join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  return null;
}

/** `redis-server --version` → "7.0.15", or null when it cannot be read. */
export function redisServerVersion(binary: string): Promise<string | null> {
  return new Promise((resolve) => {
    execFile(binary, ["--version"], { timeout: 10_000 }, (err, stdout) => {
      if (err) return resolve(null);
      resolve(/v=(\d+\.\d+\.\d+)/.exec(stdout)?.[1] ?? null);
    });
  });
}

/** "6.2.0" >= "6.2"? */
export function versionAtLeast(version: string, min: readonly [number, number]): boolean {
  const [maj = 0, min2 = 0] = version.split(".").map(Number);
  return maj > min[0] || (maj === min[0] && min2 >= min[1]);
}

export { freePort, portIsFree } from "../../core/support/index.js";

/** A process state letter from /proc (R, S, D, Z, …), or null without /proc. */
function procState(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) || null;
  } catch {
    return null;
  }
}

/** Whether `pid` exists and is not a zombie (a zombie has exited; only its parent has not reaped it yet). */
export function isAlive(pid: number | null | undefined): boolean {
  if (!pid || !Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "EPERM") return false;
  }
  return procState(pid) !== "Z";
}

/** The arguments of `pid` (redis-server rewrites its own into one title), or null where /proc cannot tell. */
function processArgv(pid: number): string[] | null {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean);
  } catch {
    return null;
  }
}

function hasProc(): boolean {
  try {
    accessSync("/proc/self/cmdline", constants.R_OK);
    return true;
  } catch {
    return false;
  }
}

/** Tells whether a process's arguments are those of a process we started. */
export type Identity = (argv: readonly string[]) => boolean;

/**
 * Whether the live process `pid` is still the one we started (pids are reused): `identity`
 * accepts its arguments. Where /proc cannot tell (not Linux), a live pid is taken as ours.
 */
export function isOurs(pid: number | null | undefined, identity: Identity): boolean {
  if (!pid || !isAlive(pid)) return false;
  const argv = processArgv(pid);
  if (argv === null) return !hasProc();
  return identity(argv);
}

/**
 * Every live process (other than this one) whose arguments each identity accepts, by identity:
 * one pass over /proc, reading each process's arguments once, however many identities. Empty
 * lists without /proc.
 */
export function findProcesses<K extends string>(identities: Readonly<Record<K, Identity>>): Record<K, number[]> {
  const kinds = Object.keys(identities) as K[];
  const out = Object.fromEntries(kinds.map((k) => [k, []])) as unknown as Record<K, number[]>;
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return out;
  }
  for (const e of entries) {
    if (!/^\d+$/.test(e)) continue;
    const pid = Number(e);
    if (pid === process.pid) continue;
    const argv = processArgv(pid);
    if (!argv) continue;
    for (const k of kinds) if (identities[k](argv) && isAlive(pid)) out[k].push(pid);
  }
  return out;
}

/** Waits (polling, at most `attempts` × `everyMs`) for `pid` to be gone. */
async function waitGone(pid: number, attempts: number, everyMs = 50): Promise<boolean> {
  for (let i = 0; i < attempts; i++) {
    if (!isAlive(pid)) return true;
    await sleep(everyMs);
  }
  return !isAlive(pid);
}

export type StopHow = "SIGTERM" | "SIGKILL" | "already gone";

/**
 * Stops a process we are not necessarily the parent of: SIGTERM, wait (≤ graceAttempts × 50 ms),
 * then SIGKILL and wait again. Returns how it went; throws if it is still there after SIGKILL.
 */
export async function stopPid(pid: number, graceAttempts: number): Promise<StopHow> {
  if (!isAlive(pid)) return "already gone";
  try {
    process.kill(pid, "SIGTERM");
  } catch {
    return "already gone";
  }
  if (await waitGone(pid, graceAttempts)) return "SIGTERM";
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // raced with its exit
  }
  if (await waitGone(pid, 100)) return "SIGKILL";
  throw new Error(`process ${pid} is still running after SIGKILL`);
}

/**
 * How to get into a Redis that wants TLS and an ACL user (dev up --secure-redis): the CA that
 * verifies its certificate, the user and the password.
 */
export interface RedisCredentials {
  caPem: Buffer;
  user: string;
  password: string;
}

/**
 * The replies of a RESP byte stream, as far as they are complete: a status or error reply as its
 * line with the type byte ("+PONG", "-LOADING …"), an integer as ":N", a bulk string as its text
 * (null for a null bulk). Enough for the commands sent here (AUTH, PING, INFO); no arrays.
 */
function respReplies(buf: Buffer): (string | null)[] {
  const out: (string | null)[] = [];
  let at = 0;
  for (;;) {
    const eol = buf.indexOf("\r\n", at);
    if (eol < 0) return out;
    const line = buf.toString("utf8", at, eol);
    if (line[0] !== "$") {
      out.push(line);
      at = eol + 2;
      continue;
    }
    const len = Number(line.slice(1));
    if (len < 0) {
      out.push(null);
      at = eol + 2;
      continue;
    }
    if (buf.length < eol + 2 + len + 2) return out;
    out.push(buf.toString("utf8", eol + 2, eol + 2 + len));
    at = eol + 2 + len + 2;
  }
}

/**
 * Sends commands (pipelined) to a Redis on 127.0.0.1:port, over TLS when `tls` is given; resolves
 * with one reply per command (respReplies: "+PONG", "-NOAUTH …", a bulk string's text).
 */
function redisCommands(port: number, commands: readonly (readonly string[])[], tls: { caPem: Buffer } | null, timeoutMs = 1000): Promise<(string | null)[]> {
  return new Promise((resolve, reject) => {
    const where = `${tls ? "rediss://" : ""}${LOOPBACK}:${port}`;
    const request = commands.map((args) => `*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join("")}`).join("");
    // the server certificate names 127.0.0.1 (an IP SAN): no SNI, the address is what is checked
    const sock = tls ? tlsConnect({ host: LOOPBACK, port, ca: tls.caPem }) : net.connect({ host: LOOPBACK, port });
    let buf = Buffer.alloc(0);
    const done = (err: Error | null, value?: (string | null)[]) => {
      clearTimeout(timer);
      sock.destroy();
      if (err) reject(err);
      else resolve(value!);
    };
    const timer = setTimeout(() => done(new Error(`no answer from ${where}`)), timeoutMs);
    sock.once("error", (e) => done(e));
    sock.once("close", () => done(new Error(`connection to ${where} closed`)));
    sock.on(tls ? "secureConnect" : "connect", () => sock.write(request));
    sock.on("data", (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      const replies = respReplies(buf);
      if (replies.length >= commands.length) done(null, replies.slice(0, commands.length));
    });
  });
}

/**
 * Whether the Redis on 127.0.0.1:port answers PING: in plaintext, or, with credentials, over TLS
 * after `AUTH user password` (a raw socket rather than ioredis, which the CLI does not load).
 */
export async function redisAnswers(port: number, credentials: RedisCredentials | null = null): Promise<boolean> {
  return (await redisReadiness(port, credentials)).state === "ready";
}

/**
 * Where a starting Redis is: `ready` (PING answers PONG); `loading` its data set from the AOF or
 * RDB (PING answers LOADING; `percent` is INFO persistence's loading_loaded_perc, null when it
 * does not say); `down` (no connection, no answer, or refused, e.g. a wrong password).
 */
export type RedisReadiness = { state: "ready" } | { state: "loading"; percent: number | null } | { state: "down" };

/** One probe of a Redis: PING (after AUTH with credentials, over TLS) and, while it loads, INFO persistence — both allowed during loading. */
export async function redisReadiness(port: number, credentials: RedisCredentials | null = null): Promise<RedisReadiness> {
  try {
    const auth = credentials ? [["AUTH", credentials.user, credentials.password]] : [];
    const replies = await redisCommands(port, [...auth, ["PING"], ["INFO", "persistence"]], credentials ? { caPem: credentials.caPem } : null, credentials ? 2000 : 1000);
    if (credentials && replies[0] !== "+OK") return { state: "down" };
    const [ping, info] = replies.slice(auth.length);
    if (ping === "+PONG") return { state: "ready" };
    if (!ping?.startsWith("-LOADING")) return { state: "down" };
    const perc = /^loading_loaded_perc:([\d.]+)\r?$/m.exec(info ?? "")?.[1];
    return { state: "loading", percent: perc === undefined ? null : Number(perc) };
  } catch {
    return { state: "down" };
  }
}

/** Whether something accepts TCP connections on 127.0.0.1:port. */
export function tcpAccepts(port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect({ host: LOOPBACK, port });
    const done = (ok: boolean) => {
      clearTimeout(timer);
      sock.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    sock.once("connect", () => done(true));
    sock.once("error", () => done(false));
  });
}

export interface TlsClientFiles {
  caPem: Buffer;
  certPem: Buffer;
  keyPem: Buffer;
}

/**
 * One grpc.health.v1 Check of the whole server ("") over mTLS with the given client certificate:
 * "SERVING", another status, or the error's text. A fresh channel each time, so that grpc-js's
 * reconnect back-off never delays the answer.
 */
export async function healthCheck(endpoint: string, tls: TlsClientFiles, deadlineMs = 2000): Promise<{ serving: boolean; detail: string }> {
  const grpc = await import("@grpc/grpc-js");
  const { service } = await import("grpc-health-check");
  const Health = grpc.makeGenericClientConstructor(service, "Health");
  const client = new Health(endpoint, grpc.credentials.createSsl(tls.caPem, tls.keyPem, tls.certPem)) as unknown as InstanceType<typeof grpc.Client> & {
    check(req: { service: string }, md: InstanceType<typeof grpc.Metadata>, opts: { deadline: number }, cb: (err: Error | null, res: { status: string }) => void): void;
  };
  try {
    return await new Promise((resolve) => {
      client.check({ service: "" }, new grpc.Metadata(), { deadline: Date.now() + deadlineMs }, (err, res) => {
        if (err) resolve({ serving: false, detail: (err as Error & { details?: string }).details ?? err.message });
        else resolve({ serving: res.status === "SERVING", detail: String(res.status) });
      });
    });
  } finally {
    client.close();
  }
}
