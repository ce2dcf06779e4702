/**
 * The raw broadcast baseline's clients (bench/gateway, bench/rooms) in a process of their own, so
 * that K of them and the K devices of the gateway side fit the open-file limit of one process each
 * (10,000 + 10,000 did not fit this machine's 20,000 in the bench's one process). Plain `ws`
 * clients over TLS that count the frames they get.
 * Protocol (stdin lines → stdout lines):
 *   start                        → "open N" once every client is open, or "error MESSAGE" and exit 1
 *   "reset"                      → counts to 0, then "reset"
 *   "wait COUNT"                 → once every client has COUNT frames since the reset: "done LAST_MS"
 *                                   (Date.now() of the last arrival; the parent runs on the same clock)
 * Usage (by bench/gateway/broadcast.ts): node dist/bench/gateway/raw-clients-child.js PORT CA_FILE N CONCURRENCY
 */
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import WebSocket from "ws";

const [port, caPath, nArg, concurrencyArg] = process.argv.slice(2);
const ca = readFileSync(caPath!);
const n = Number(nArg);
const counts = new Uint32Array(n);
let last = 0;
let waiting: { count: number } | null = null;
let below = n;

const open = (i: number) => new Promise<WebSocket>((resolve, reject) => {
  const ws = new WebSocket(`wss://localhost:${port}/`, { ca, perMessageDeflate: false });
  ws.once("open", () => resolve(ws));
  ws.once("error", reject);
  ws.on("message", () => {
    counts[i]!++;
    last = Date.now();
    if (waiting !== null && counts[i] === waiting.count && --below === 0) answer();
  });
});

function answer(): void {
  waiting = null;
  process.stdout.write(`done ${last}\n`);
}

const sockets: WebSocket[] = [];
let next = 0;
try {
  await Promise.all(Array.from({ length: Math.min(Number(concurrencyArg), n) }, async () => {
    for (let i = next++; i < n; i = next++) sockets[i] = await open(i);
  }));
} catch (err) {
  process.stdout.write(`error ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
process.stdout.write(`open ${n}\n`);

createInterface({ input: process.stdin }).on("line", (line) => {
  const [cmd, arg] = line.trim().split(/\s+/);
  if (cmd === "reset") {
    counts.fill(0);
    last = 0;
    process.stdout.write("reset\n");
  } else if (cmd === "wait") {
    const count = Number(arg);
    below = counts.reduce((k, c) => k + (c < count ? 1 : 0), 0);
    waiting = { count };
    if (below === 0) answer();
  }
}).on("close", () => {
  for (const ws of sockets) ws.terminate();
  process.exit(0);
});
