/**
 * The raw broadcast baseline of bench/gateway and bench/rooms: a bare `ws` server over TLS (the
 * node's certificate) in a process of its own (broadcast-child.ts), and K plain `ws` clients of it
 * that count what they get, in another (raw-clients-child.ts).
 */
import { spawn } from "node:child_process";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type { Target } from "../loadgen/index.js";

export interface Broadcaster {
  port: number;
  pid: number;
  /** Writes `count` frames of `bytes` bytes to every client, one send each. */
  go(count: number, bytes: number): void;
  stop(): void;
}

/** K raw clients of the broadcaster, in a process of their own (raw-clients-child.ts). */
export interface RawClients {
  pid: number;
  /** Sets every client's count of frames to 0 (resolves once done, so a broadcast after it is counted whole). */
  reset(): Promise<void>;
  /** Resolves with the last arrival's Date.now() once every client has `count` frames since the reset; rejects after `timeoutMs`. */
  waitFor(count: number, timeoutMs: number): Promise<number>;
  close(): void;
}

export async function startBroadcaster(t: Target): Promise<Broadcaster> {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const child = spawn(process.execPath, [path.join(here, "broadcast-child.js"), t.pki.server.certPath, t.pki.server.keyPath], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout! });
  const port = await new Promise<number>((resolve, reject) => {
    lines.once("line", (l) => resolve(Number(/listening (\d+)/.exec(l)?.[1] ?? NaN)));
    child.once("exit", (code) => reject(new Error(`the broadcast server exited (${code})`)));
  });
  return { port, pid: child.pid!, go: (count, bytes) => child.stdin!.write(`go ${count} ${bytes}\n`), stop: () => child.kill("SIGTERM") };
}

/** Opens `n` clients of the broadcaster, `concurrency` at a time, in a child process. */
export async function openRawClients(b: Broadcaster, caPath: string, n: number, concurrency: number): Promise<RawClients> {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const child = spawn(process.execPath, [path.join(here, "raw-clients-child.js"), String(b.port), caPath, String(n), String(concurrency)], { stdio: ["pipe", "pipe", "inherit"] });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  const next = async (want: RegExp): Promise<RegExpExecArray> => {
    const r = await lines.next();
    const m = r.done ? null : want.exec(r.value as string);
    if (!m) throw new Error(`the raw clients' process answered ${r.done ? "nothing (it ended)" : JSON.stringify(r.value)}, not ${want}`);
    return m;
  };
  try {
    await next(/^open \d+$/);
  } catch (err) {
    child.kill("SIGKILL");
    throw err;
  }
  return {
    pid: child.pid!,
    reset: async () => {
      child.stdin!.write("reset\n");
      await next(/^reset$/);
    },
    waitFor: async (count, timeoutMs) => {
      child.stdin!.write(`wait ${count}\n`);
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`the raw clients did not all get ${count} frames within ${timeoutMs} ms`)), timeoutMs);
      });
      try {
        return Number((await Promise.race([next(/^done (\d+)$/), late]))[1]);
      } finally {
        clearTimeout(timer);
      }
    },
    close: () => void child.stdin!.end(),
  };
}
