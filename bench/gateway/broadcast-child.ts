/**
 * bench/gateway's fanout baseline: a raw `ws` server over TLS (the node's certificate) in a process
 * of its own, as the node is, that writes the same bytes to every connection one send each — what
 * a gateway's push would cost with no engine behind it. Prints "listening PORT" on stdout; each
 * stdin line "go COUNT BYTES" broadcasts COUNT frames of BYTES bytes, then prints "sent".
 * Usage (by bench/gateway.ts): node dist/bench/gateway/broadcast-child.js CERT KEY
 */
import { readFileSync } from "node:fs";
import { createServer } from "node:https";
import { createInterface } from "node:readline";
import { WebSocketServer, type WebSocket } from "ws";

const [certPath, keyPath] = process.argv.slice(2);
const https = createServer({ cert: readFileSync(certPath!), key: readFileSync(keyPath!) });
const wss = new WebSocketServer({ server: https, perMessageDeflate: false });
const clients = new Set<WebSocket>();
wss.on("connection", (ws) => {
  clients.add(ws);
  ws.on("close", () => clients.delete(ws));
});
https.listen(0, "127.0.0.1", () => {
  const addr = https.address();
  process.stdout.write(`listening ${typeof addr === "object" && addr ? addr.port : 0}\n`);
});
createInterface({ input: process.stdin }).on("line", (line) => {
  const [cmd, count, bytes] = line.trim().split(/\s+/);
  if (cmd !== "go") return;
  const frame = Buffer.alloc(Number(bytes), 0x62);
  for (let i = 0; i < Number(count); i++) for (const ws of clients) ws.send(frame, { binary: true });
  process.stdout.write("sent\n");
});
