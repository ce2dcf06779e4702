/**
 * bench/rooms (issue 28, spec 003 §1) on a real qim-node process (loopback, TLS), devices driven by
 * the load generator's client, in one run:
 *   a. one room with K online connections (default 5,000): a sender offers 200 msg/s (spec 003 C-3's
 *      load) for --seconds; the writer takes room_msg_rate (20/s) and the node delivers each message
 *      to every connection, merged at room_outbound_frame_rate (10 frames/s per connection). Events
 *      delivered per second (every event on every connection, from the first send to the last
 *      arrival) and frames per second — against a raw `ws` broadcast server (TLS, its own process)
 *      writing the same events, one frame each as a naive room would, to K connections in the same
 *      run (events/s from its start to its last arrival);
 *   b. C-3's isolation: a 1:1 group's delivery (SEND to MESSAGE on the other member's device,
 *      end-to-end p50/p99 by the MESSAGE's created_at_ms) at 20 sends/s on the same node, without
 *      and with a.'s room load running, alternating; the ratio of the p99s. The pair's two devices
 *      run in a process of their own (rooms-pair-child.ts): in this one, its MESSAGE would wait
 *      behind the decoding of K connections' room frames.
 *      Also the pair's SEND to SEND_ACK (the commit path alone). Quantiles of b. are over every
 *      round's messages together (20/s for 5 s is 100 a round: a round's p99 is its second worst).
 * Rounds alternate each measurement and its baseline; a.'s medians are printed.
 * --nice N lowers this process's CPU priority (os.setPriority) once the node and the pair run: on
 * a machine of two cores, the K clients' TLS and decoding take a core of their own, and the
 * nearest this host gets to clients on other machines is a node that wins the scheduler.
 * Usage: node dist/bench/rooms.js [--connections K] [--seconds S] [--rounds R] [--nice N] [--output json]
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import path from "node:path";
import { setPriority } from "node:os";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { Frame, RoomWindow } from "../admin-api/gen/qim/client/v1/frames.js";
import { flag } from "./args.js";
import { openRawClients, startBroadcaster, type RawClients } from "./gateway/broadcast.js";
import { ensureOpenFiles, LoadDevice, openDevices, quantile, startTarget, type Target } from "./loadgen/index.js";

const argv = process.argv.slice(2);
const JSON_OUT = argv.includes("--output") && argv[argv.indexOf("--output") + 1] === "json";
const K = flag("--connections", 5000);
const SECONDS = flag("--seconds", 5);
const ROUNDS = flag("--rounds", 3);
const NICE = flag("--nice", 0);
/** Spec 003's numbers, written out: C-3's offered load, the writer's rate (with its one-second burst). */
const OFFERED_PER_SEC = 200;
const ROOM_MSG_RATE = 20;
const ONE_TO_ONE_PER_SEC = 20;
const PAYLOAD = Buffer.alloc(100, 0x61);
const CONNECT_CONCURRENCY = 32;
const ARRIVAL_TIMEOUT_MS = 120_000;
/** What the pair's process answers for one run (rooms-pair-child.ts). */
interface PairResult { delivery: number[]; acks: number[] }

const say = (line: string) => process.stderr.write(`${line}\n`);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(what: string, cond: () => boolean): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ARRIVAL_TIMEOUT_MS) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

async function connect(t: Target, n: number, tag: string): Promise<LoadDevice[]> {
  return openDevices(n, CONNECT_CONCURRENCY, async (i) => {
    const user = randomUUID();
    return LoadDevice.open(t.url, t.ca, await t.sign(user, `${tag}${i}`), user, `${tag}${i}`);
  });
}

/** Offers OFFERED_PER_SEC room messages for `ms`; the events the writer took (their acks). */
async function roomLoad(sender: LoadDevice, room: string, ms: number): Promise<number> {
  const answers: Promise<Frame>[] = [];
  const t0 = Date.now();
  for (let i = 0; Date.now() - t0 < ms; i++) {
    answers.push(sender.request({ $case: "roomSend", roomSend: { room, clientMsgNo: randomUUID(), contentType: "application/octet-stream", payload: PAYLOAD } }));
    await sleep(1000 / OFFERED_PER_SEC);
  }
  const frames = await Promise.all(answers);
  const bad = frames.find((f) => f.body?.$case !== "roomSendAck" && !(f.body?.$case === "error" && f.body.error.code === "RATE_LIMITED"));
  if (bad) throw new Error(`ROOM_SEND answered ${JSON.stringify(bad.body?.$case)}`);
  return frames.filter((f) => f.body?.$case === "roomSendAck").length;
}

// this process holds the K members and the sender (the raw clients and the 1:1 pair have their own)
await ensureOpenFiles(K + 64);
const t = await startTarget();
const all: LoadDevice[] = [];
const out: Record<string, unknown> = { connections: K, seconds: SECONDS, rounds: ROUNDS, offeredPerSec: OFFERED_PER_SEC, payloadBytes: PAYLOAD.length };
const broadcaster = await startBroadcaster(t);
let raw: RawClients | undefined;
let pairChild: ChildProcess | undefined;
try {
  const members = await connect(t, K, "r");
  const [sender] = await connect(t, 1, "s");
  all.push(...members, sender!);
  say(`${K} connections open`);
  // the 1:1 pair of b., in a process of its own (rooms-pair-child.ts): its latency is the node's, not this process's event loop's
  const [pa, pb] = [randomUUID(), randomUUID()];
  const oneToOne = (await t.admin.createGroup({ tenant: t.tenant, group: "", owner: pa, members: [pb] })).group;
  pairChild = spawn(process.execPath, [path.join(path.dirname(fileURLToPath(import.meta.url)), "rooms-pair-child.js"), t.url, t.pki.ca.certPath, oneToOne, pa, await t.sign(pa, "pair-a"), pb, await t.sign(pb, "pair-b")], { stdio: ["pipe", "pipe", "inherit"] });
  const pairLines = createInterface({ input: pairChild.stdout! })[Symbol.asyncIterator]();
  const nextLine = async (): Promise<string> => {
    const r = await pairLines.next();
    if (r.done) throw new Error("the 1:1 pair's process ended");
    return r.value as string;
  };
  if ((await nextLine()) !== "ready") throw new Error("the 1:1 pair's process did not start");
  // after the node and the pair started: they keep the default priority
  if (NICE !== 0) setPriority(process.pid, NICE);
  raw = await openRawClients(broadcaster, t.pki.ca.certPath, K, CONNECT_CONCURRENCY);
  // one event as a naive room would send it alone: a ROOM_BATCH frame with one window of one event
  const eventFrameBytes = Frame.encode({
    requestId: 0n,
    body: {
      $case: "roomBatch",
      roomBatch: { windows: [RoomWindow.fromPartial({ room: randomUUID(), roomEpoch: 1, earliestReplayRoomSeq: 1n << 48n, latestRoomSeq: (1n << 48n) + 1n, online: K, events: [{ roomSeq: (1n << 48n) + 1n, messageId: randomUUID(), sender: randomUUID(), senderDevice: "s0", createdAtMs: BigInt(Date.now()), contentType: "application/octet-stream", payload: PAYLOAD }] })] },
    },
  }).finish().length;

  const a = { lagMs: [] as number[], events: [] as number[], frames: [] as number[], raw: [] as number[], taken: [] as number[], maxFramesPerConnPerSec: [] as number[] };
  const b = { quiet: [] as number[], loaded: [] as number[], quietAcks: [] as number[], loadedAcks: [] as number[] };

  /** 1:1 sends at ONE_TO_ONE_PER_SEC for `ms` (in the pair's process): end-to-end ms of each on the other member's device, and each SEND_ACK's ms. */
  const oneToOneRun = async (ms: number): Promise<PairResult> => {
    pairChild!.stdin!.write(`run ${ms} ${ONE_TO_ONE_PER_SEC} ${PAYLOAD.length}\n`);
    const line = await nextLine();
    if (!line.startsWith("result ")) throw new Error(`the 1:1 pair said ${line}`);
    return JSON.parse(line.slice(7)) as PairResult;
  };

  for (let r = 0; r < ROUNDS; r++) {
    // b. without the room load
    const quiet = await oneToOneRun(SECONDS * 1000);
    b.quiet.push(...quiet.delivery); b.quietAcks.push(...quiet.acks);

    // a. (and b. beside it): a fresh room each round
    const room = randomUUID();
    await openDevices(K, CONNECT_CONCURRENCY, async (i) => {
      const f = await members[i]!.request({ $case: "roomJoin", roomJoin: { room, afterRoomSeq: 0n } });
      if (f.body?.$case !== "roomBatch") throw new Error(`ROOM_JOIN answered ${f.body?.$case}`);
      return members[i]!;
    });
    await sender!.request({ $case: "roomJoin", roomJoin: { room, afterRoomSeq: 0n } });
    await sleep(1500); // the writer's counts settle, and the join storm is over
    const base = members.map((m) => ({ events: m.rooms.events, frames: m.rooms.frames }));
    const watched = members.slice(0, 50);
    for (const m of watched) m.rooms.times = [];
    let sendEnd = 0;
    const t0 = Date.now();
    const [taken, loaded] = await Promise.all([roomLoad(sender!, room, SECONDS * 1000).finally(() => { sendEnd = Date.now(); }), oneToOneRun(SECONDS * 1000)]);
    await until("every connection has every taken event", () => members.every((m, i) => m.rooms.events - base[i]!.events >= taken));
    const last = Math.max(...members.map((m) => m.rooms.lastAt));
    const events = members.reduce((s, m, i) => s + m.rooms.events - base[i]!.events, 0);
    const frames = members.reduce((s, m, i) => s + m.rooms.frames - base[i]!.frames, 0);
    a.events.push(events / ((last - t0) / 1000)); a.frames.push(frames / ((last - t0) / 1000)); a.taken.push(taken);
    a.lagMs.push(last - sendEnd);
    let most = 0;
    for (const times of watched.map((m) => m.rooms.times!)) for (let i = 0, j = 0; i < times.length; i++) { while (times[i]! - times[j]! >= 1000) j++; most = Math.max(most, i - j + 1); }
    a.maxFramesPerConnPerSec.push(most);
    b.loaded.push(...loaded.delivery); b.loadedAcks.push(...loaded.acks);
    for (const m of members) void m.request({ $case: "roomLeave", roomLeave: { room } }).catch(() => undefined);

    // the raw baseline: the same events to K connections, one frame each
    await raw!.reset();
    const r0 = Date.now();
    broadcaster.go(taken, eventFrameBytes);
    a.raw.push((K * taken) / ((await raw!.waitFor(taken, ARRIVAL_TIMEOUT_MS) - r0) / 1000));
    say(`round ${r + 1}: ${taken} of ${OFFERED_PER_SEC * SECONDS} taken; room ${a.events.at(-1)!.toFixed(0)} events/s in ${a.frames.at(-1)!.toFixed(0)} frames/s (at most ${most} frames in a second on a watched connection); raw ws one frame per event ${a.raw.at(-1)!.toFixed(0)} events/s; 1:1 p99 ${quantile(quiet.delivery, 0.99)} ms quiet, ${quantile(loaded.delivery, 0.99)} ms with the room`);
    await sleep(1000);
  }
  out.room = {
    takenPerRound: median(a.taken), eventsPerSec: Math.round(median(a.events)), framesPerSec: Math.round(median(a.frames)), maxFramesPerConnectionPerSec: Math.max(...a.maxFramesPerConnPerSec),
    lastArrivalAfterLastAckMs: median(a.lagMs), rawWsEventsPerSec: Math.round(median(a.raw)), eventFrameBytes, ratio: +(median(a.events) / median(a.raw)).toFixed(3),
  };
  out.isolation = {
    nice: NICE, messages: b.quiet.length + b.loaded.length,
    quietP50Ms: quantile(b.quiet, 0.5), quietP99Ms: quantile(b.quiet, 0.99), loadedP50Ms: quantile(b.loaded, 0.5), loadedP99Ms: quantile(b.loaded, 0.99),
    p99Ratio: +(quantile(b.loaded, 0.99) / Math.max(1, quantile(b.quiet, 0.99))).toFixed(2),
    ackQuietP50Ms: quantile(b.quietAcks, 0.5), ackQuietP99Ms: quantile(b.quietAcks, 0.99), ackLoadedP50Ms: quantile(b.loadedAcks, 0.5), ackLoadedP99Ms: quantile(b.loadedAcks, 0.99),
  };
} finally {
  raw?.close();
  pairChild?.kill("SIGTERM");
  broadcaster.stop();
  for (const x of all) x.close();
  await t.stop();
}

if (JSON_OUT) process.stdout.write(`${JSON.stringify(out)}\n`);
else {
  const o = out as { room: Record<string, number>; isolation: Record<string, number> };
  process.stdout.write(`a. one room, ${K} connections, ${OFFERED_PER_SEC} msg/s offered (room_msg_rate ${ROOM_MSG_RATE}/s taken: ${o.room.takenPerRound} a round): ${o.room.eventsPerSec} events/s delivered in ${o.room.framesPerSec} frames/s (at most ${o.room.maxFramesPerConnectionPerSec} frames in any second on a watched connection; the last arrival ${o.room.lastArrivalAfterLastAckMs} ms after the last ack); raw ws, one ${o.room.eventFrameBytes} B frame per event: ${o.room.rawWsEventsPerSec} events/s; ratio ${o.room.ratio}×\n`);
  process.stdout.write(`b. 1:1 delivery at ${ONE_TO_ONE_PER_SEC}/s on the same node: p50 ${o.isolation.quietP50Ms} ms, p99 ${o.isolation.quietP99Ms} ms without the room; p50 ${o.isolation.loadedP50Ms} ms, p99 ${o.isolation.loadedP99Ms} ms with it (${o.isolation.p99Ratio}×; ${o.isolation.messages} messages${NICE ? `, this process at nice ${NICE}` : ""}); SEND_ACK p50/p99 ${o.isolation.ackQuietP50Ms}/${o.isolation.ackQuietP99Ms} ms without, ${o.isolation.ackLoadedP50Ms}/${o.isolation.ackLoadedP99Ms} ms with\n`);
}
