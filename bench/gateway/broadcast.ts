/**
 * The raw broadcast baseline of bench/gateway and bench/rooms: a bare `ws` server over TLS (the
 * node's certificate) in a process of its own (broadcast-child.ts), and K plain `ws` clients of it
 * that count what they get.
 */
import { spawn } from "node:child_process";
import path from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import WebSocket from "ws";
import { openDevices, type Target } from "../loadgen/index.js";

export interface Broadcaster {
  port: number;
  pid: number;
  /** Writes `count` frames of `bytes` bytes to every client, one send each. */
  go(count: number, bytes: number): void;
  stop(): void;
}

/** A raw client: frames received, and when the last came (ms). */
export interface RawClient {
  ws: WebSocket;
  count: number;
  last: number;
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

/** Opens `n` clients of the broadcaster, `concurrency` at a time. */
export async function openRawClients(b: Broadcaster, ca: Buffer, n: number, concurrency: number): Promise<RawClient[]> {
  return openDevices(n, concurrency, async () => {
    const ws = await new Promise<WebSocket>((resolve, reject) => {
      const w = new WebSocket(`wss://localhost:${b.port}/`, { ca, perMessageDeflate: false });
      w.once("open", () => resolve(w));
      w.once("error", reject);
    });
    const c: RawClient = { ws, count: 0, last: 0 };
    ws.on("message", () => {
      c.count++;
      c.last = Date.now();
    });
    return c;
  });
}
