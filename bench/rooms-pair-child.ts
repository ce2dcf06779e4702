/**
 * bench/rooms' 1:1 pair in a process of its own: two devices of a 1:1 group, so that their
 * latency is the node's and not the bench client's event loop (which decodes every room frame of
 * K connections). Args: URL CA_PATH GROUP USER_A TOKEN_A USER_B TOKEN_B. Reads "run MS PER_SEC
 * PAYLOAD_BYTES" lines on stdin; for each, A sends at PER_SEC for MS (one in flight) and the child
 * prints `result {"delivery":[ms, …],"acks":[ms, …]}`: each message's commit (created_at_ms) to its
 * arrival on B, and each SEND's round trip to its SEND_ACK.
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { LoadDevice } from "./loadgen/index.js";

const [url, caPath, group, userA, tokenA, userB, tokenB] = process.argv.slice(2) as [string, string, string, string, string, string, string];
const ca = readFileSync(caPath);
const a = await LoadDevice.open(url, ca, tokenA, userA, "pair-a");
const b = await LoadDevice.open(url, ca, tokenB, userB, "pair-b");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function run(ms: number, perSec: number, bytes: number): Promise<{ delivery: number[]; acks: number[] }> {
  const payload = Buffer.alloc(bytes, 0x61);
  const sent = new Set<string>();
  const acks: number[] = [];
  const from = b.arrivals.length;
  const t0 = Date.now();
  while (Date.now() - t0 < ms) {
    const s0 = performance.now();
    const f = await a.request({ $case: "send", send: { clientMsgNo: randomUUID(), group, payload, contentType: "application/octet-stream", mentions: [] } });
    if (f.body?.$case !== "sendAck") throw new Error(`SEND answered ${f.body?.$case}`);
    acks.push(Math.round(performance.now() - s0));
    sent.add(f.body.sendAck.messageId);
    await sleep(1000 / perSec);
  }
  const deadline = Date.now() + 120_000;
  while (b.arrivals.slice(from).filter((m) => sent.has(m.messageId)).length < sent.size) {
    if (Date.now() > deadline) throw new Error("the 1:1 messages did not all arrive");
    await sleep(5);
  }
  const seen = new Set<string>();
  const delivery = b.arrivals.slice(from).filter((m) => sent.has(m.messageId) && !seen.has(m.messageId) && seen.add(m.messageId)).map((m) => m.arrivedAtMs - m.createdAtMs);
  return { delivery, acks };
}

process.stdout.write("ready\n");
for await (const line of createInterface({ input: process.stdin })) {
  const [verb, ms, perSec, bytes] = line.split(" ");
  if (verb !== "run") continue;
  process.stdout.write(`result ${JSON.stringify(await run(Number(ms), Number(perSec), Number(bytes)))}\n`);
}
a.close();
b.close();
