/**
 * bench/gateway — the client gateway (issue 27) on a real qim-node process (loopback, TLS), devices
 * driven by the load generator's client (bench/loadgen), in one run:
 *   a. sends through the gateway: one 20-member group, 64 SENDs in flight on one connection, the
 *      other 19 members offline: sends/s and SEND_ACK p50/p99, against core alone in this process
 *      (EngineRuntime on the same redis-server, runtime.conversations.send, 64 in flight, a group of
 *      20) → ratio (goal ≥ 0.4×);
 *   b. the same with all 20 members online: deliveries/s (first arrival of each message on each
 *      device, from the first send to the last arrival) and end-to-end p50/p99 (MESSAGE created_at_ms
 *      to arrival, the same host's clock);
 *   c. memory per idle authenticated connection: K devices connect and authenticate, the first
 *      tenth warming up; the node's VmRSS before and after the other nine tenths, delta / their
 *      number (goal ≤ 10 KB), against the bare ws server of d holding K connections (its VmRSS delta / K);
 *   d. fanout: F messages to one 10,000-member group with its sender and min(K, 9,999) of those
 *      members online (the rest offline; `--idle 10000` is the issue's 10,000 online): deliveries/s
 *      from the first send to the last arrival, against a raw `ws` broadcast server (TLS, its own
 *      process, one send per connection) writing frames of the same size to K clients (their own
 *      process too: 10,000 here and 10,000 there fit one process's open files each) in the same
 *      run (goal ≥ 0.5×); also from the first commit (created_at) to the
 *      last arrival, the push side alone. Each round starts on a quiet node: the group is created,
 *      then the bench waits until no fanout job is left (the earlier rounds' member rows) and a second.
 * Rounds alternate each measurement and its baseline; medians are printed.
 * It needs about K + 300 open files in this process and in the node; when the limit is lower and
 * may be raised here, it runs itself again under `ulimit -n` and says so.
 * Usage: node dist/bench/gateway.js [--sends N] [--rounds R] [--idle K] [--fanout-messages F] [--output json]
 */
import { randomUUID } from "node:crypto";
import { Frame } from "../admin-api/gen/qim/client/v1/frames.js";
import { EngineRuntime, GATEWAY_MAX_IN_FLIGHT, RedisStore } from "../core/index.js";
import { flag } from "./args.js";
import { openRawClients, startBroadcaster, type RawClients } from "./gateway/broadcast.js";
import { ensureOpenFiles, LoadDevice, openDevices, quantile, rssBytes, startTarget, type Target } from "./loadgen/index.js";

const argv = process.argv.slice(2);
const JSON_OUT = argv.includes("--output") && argv[argv.indexOf("--output") + 1] === "json";
const SENDS = flag("--sends", 4000);
const ROUNDS = flag("--rounds", 3);
const IDLE = flag("--idle", 2000);
const FANOUT_MESSAGES = flag("--fanout-messages", 5);
/** The figures: a 20-member group, 64 in flight (the gateway's per-connection cap), a 10,000-member fanout group. */
const GROUP_SIZE = 20;
const IN_FLIGHT = GATEWAY_MAX_IN_FLIGHT;
const FANOUT_GROUP_SIZE = 10_000;
const PAYLOAD_BYTES = 100;
const CONNECT_CONCURRENCY = 32;
/** How long a round may wait for its last arrival before it is reported as failed. */
const ARRIVAL_TIMEOUT_MS = 120_000;
/** The node settles (TLS buffers, lazily allocated per-connection state) before its RSS is read. */
const SETTLE_MS = 3000;

const say = (line: string) => process.stderr.write(`${line}\n`);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const payload = Buffer.alloc(PAYLOAD_BYTES, 0x61);

/** Waits for `cond`, checked every `everyMs` (a check over 10,000 devices' arrivals is not free: this process also receives them). */
async function until(what: string, cond: () => boolean, everyMs = 5): Promise<void> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ARRIVAL_TIMEOUT_MS) throw new Error(`timed out waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** Frames of every kind that reached `ds` so far: a cheap bound before firstArrivals is counted. */
const arrivalCount = (ds: LoadDevice[]) => ds.reduce((n, d) => n + d.arrivals.length, 0);

/** Runs `n` operations with IN_FLIGHT in flight; ops/s and each one's latency in ms. */
async function pipelined(n: number, op: () => Promise<void>): Promise<{ perSec: number; latMs: number[] }> {
  const latMs: number[] = [];
  let next = 0;
  const t0 = process.hrtime.bigint();
  await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
    while (next++ < n) {
      const s = process.hrtime.bigint();
      await op();
      latMs.push(Number(process.hrtime.bigint() - s) / 1e6);
    }
  }));
  return { perSec: n / (Number(process.hrtime.bigint() - t0) / 1e9), latMs };
}

const gatewaySend = (d: LoadDevice, group: string) => async () => {
  const f = await d.request({ $case: "send", send: { clientMsgNo: randomUUID(), group, payload, contentType: "application/octet-stream", mentions: [] } });
  if (f.body?.$case !== "sendAck") throw new Error(`SEND answered ${f.body?.$case}`);
};

async function connect(t: Target, users: string[], tag: string): Promise<LoadDevice[]> {
  return openDevices(users.length, CONNECT_CONCURRENCY, async (i) => LoadDevice.open(t.url, t.ca, await t.sign(users[i]!, `${tag}${i}`), users[i]!, `${tag}${i}`));
}

async function createGroup(t: Target, owner: string, members: string[]): Promise<string> {
  return (await t.admin.createGroup({ tenant: t.tenant, group: "", owner, members })).group;
}

/** First arrivals of `group`'s normal messages on `ds` (after dedupe by id). */
const firstArrivals = (ds: LoadDevice[], group: string) => ds.flatMap((d) => {
  const seen = new Set<string>();
  return d.arrivals.filter((m) => m.group === group && m.kind === "normal" && !seen.has(m.messageId) && seen.add(m.messageId));
});

/**
 * Waits until no fanout job is left in any bucket (the jobs' chunks feed every member's list row and
 * projection: seconds of the node's CPU for a 10,000-member group) and one more second; returns
 * how long it waited (ms).
 */
async function quiet(s: RedisStore): Promise<number> {
  const t0 = Date.now();
  const client = s.clients()[0]!;
  for (;;) {
    let pending = 0;
    let cursor = "0";
    do {
      const [next, keys] = await client.scan(cursor, "MATCH", "*fanout:jobs", "COUNT", 1000);
      for (const k of keys) pending += await client.llen(k);
      cursor = next;
    } while (cursor !== "0");
    if (pending === 0) break;
    await sleep(100);
  }
  await sleep(1000);
  return Date.now() - t0;
}

// this process holds the K idle devices and parts a and b's (the raw clients have their own)
await ensureOpenFiles(IDLE + 2 * GROUP_SIZE + 1);
const t = await startTarget();
const store = new RedisStore({ kind: "instances", addrs: [t.redis.addr] });
const runtime = new EngineRuntime({ store, keyPrefix: "qimbenchgw", dispatch: { clusterId: "qim", topicId: "bench-gateway", partitionCount: 8 } });
await runtime.start();
const all: LoadDevice[] = [];
const out: Record<string, unknown> = { sends: SENDS, rounds: ROUNDS, inFlight: IN_FLIGHT, groupSize: GROUP_SIZE, payloadBytes: PAYLOAD_BYTES };
try {
  // a. and b.: two groups of the same 20 users; the sender alone online for a., all 20 for b.
  const users = Array.from({ length: GROUP_SIZE }, () => randomUUID());
  const [sender] = await connect(t, users.slice(0, 1), "a");
  all.push(sender!);
  const a = { gw: [] as number[], core: [] as number[], p50: [] as number[], p99: [] as number[], coreP50: [] as number[], coreP99: [] as number[] };
  const coreGroup = (await runtime.conversations.createGroup({ tenant: t.tenant, owner: users[0]!, members: users.slice(1) })).group;
  const coreSend = async () => {
    await runtime.conversations.send({ tenant: t.tenant, group: coreGroup, sender: users[0]!, payload, contentType: "application/octet-stream" });
  };
  const offlineGroup = await createGroup(t, users[0]!, users.slice(1));
  await pipelined(500, gatewaySend(sender!, offlineGroup));
  await pipelined(500, coreSend);
  for (let r = 0; r < ROUNDS; r++) {
    const c = await pipelined(SENDS, coreSend);
    const g = await pipelined(SENDS, gatewaySend(sender!, offlineGroup));
    a.core.push(c.perSec); a.coreP50.push(quantile(c.latMs, 0.5)); a.coreP99.push(quantile(c.latMs, 0.99));
    a.gw.push(g.perSec); a.p50.push(quantile(g.latMs, 0.5)); a.p99.push(quantile(g.latMs, 0.99));
    say(`a. round ${r + 1}: gateway ${g.perSec.toFixed(0)} sends/s, core ${c.perSec.toFixed(0)} sends/s`);
  }
  out.offline = {
    gatewaySendsPerSec: Math.round(median(a.gw)), coreSendsPerSec: Math.round(median(a.core)), ratio: +(median(a.gw) / median(a.core)).toFixed(3),
    sendAckP50Ms: +median(a.p50).toFixed(2), sendAckP99Ms: +median(a.p99).toFixed(2), coreP50Ms: +median(a.coreP50).toFixed(2), coreP99Ms: +median(a.coreP99).toFixed(2),
  };

  const members = [sender!, ...(await connect(t, users.slice(1), "b"))];
  all.push(...members.slice(1));
  const b = { deliveries: [] as number[], p50: [] as number[], p99: [] as number[], sends: [] as number[] };
  for (let r = 0; r < ROUNDS; r++) {
    const group = await createGroup(t, users[0]!, users.slice(1));
    const t0 = Date.now();
    const s = await pipelined(SENDS, gatewaySend(sender!, group));
    await until(`every member has the ${SENDS} messages`, () => firstArrivals(members, group).length >= SENDS * GROUP_SIZE);
    const got = firstArrivals(members, group);
    const last = Math.max(...got.map((m) => m.arrivedAtMs));
    const e2e = got.map((m) => m.arrivedAtMs - m.createdAtMs);
    b.deliveries.push(got.length / ((last - t0) / 1000)); b.sends.push(s.perSec); b.p50.push(quantile(e2e, 0.5)); b.p99.push(quantile(e2e, 0.99));
    say(`b. round ${r + 1}: ${b.deliveries.at(-1)!.toFixed(0)} deliveries/s, end to end p99 ${b.p99.at(-1)} ms`);
  }
  out.online = {
    deliveriesPerSec: Math.round(median(b.deliveries)), sendsPerSec: Math.round(median(b.sends)),
    endToEndP50Ms: median(b.p50), endToEndP99Ms: median(b.p99),
  };

  // c. idle connections
  const idleUsers = Array.from({ length: IDLE }, () => randomUUID());
  // the first tenth warms the connect and AUTH paths and is not counted: the rest is measured
  const warm = Math.floor(IDLE / 10);
  const idle = await connect(t, idleUsers.slice(0, warm), "i");
  all.push(...idle);
  await sleep(SETTLE_MS);
  const rss0 = rssBytes(t.node.pid);
  const measured = await connect(t, idleUsers.slice(warm), "j");
  idle.push(...measured);
  all.push(...measured);
  await sleep(SETTLE_MS);
  const rss1 = rssBytes(t.node.pid);
  const counted = IDLE - warm;
  out.idle = { connections: counted, warmUp: warm, rssBeforeBytes: rss0, rssAfterBytes: rss1, bytesPerConnection: Math.round((rss1 - rss0) / counted) };
  say(`c. ${counted} idle connections (after ${warm} not counted): node RSS ${(rss0 / 2 ** 20).toFixed(1)} → ${(rss1 / 2 ** 20).toFixed(1)} MiB, ${((rss1 - rss0) / counted / 1024).toFixed(2)} KiB each`);

  // d. fanout to the K idle devices, members of a 10,000-member group
  const fanOwner = randomUUID();
  const [fanSender] = await connect(t, [fanOwner], "f");
  all.push(fanSender!);
  // the group: the sender and up to 9,999 of the idle devices' users (online), the rest offline
  const fanUsers = idleUsers.slice(0, FANOUT_GROUP_SIZE - 1);
  const fanIdle = idle.slice(0, fanUsers.length);
  const ONLINE = fanIdle.length;
  const filler = Array.from({ length: FANOUT_GROUP_SIZE - 1 - ONLINE }, () => randomUUID());
  const d = { gw: [] as number[], gwFromCommit: [] as number[], raw: [] as number[], p50: [] as number[], p99: [] as number[] };
  const broadcaster = await startBroadcaster(t);
  let raw: RawClients | undefined;
  try {
    // c's baseline: the bare ws server over TLS holds the same K connections (no token, no engine)
    await sleep(SETTLE_MS);
    const bare0 = rssBytes(broadcaster.pid);
    raw = await openRawClients(broadcaster, t.pki.ca.certPath, IDLE, CONNECT_CONCURRENCY);
    await sleep(SETTLE_MS);
    const bare = Math.round((rssBytes(broadcaster.pid) - bare0) / IDLE);
    Object.assign(out.idle as object, { bareWsTlsBytesPerConnection: bare, vsBareWsTls: +((out.idle as { bytesPerConnection: number }).bytesPerConnection / bare).toFixed(2) });
    say(`c. baseline: a bare ws server over TLS holding ${IDLE} connections: ${(bare / 1024).toFixed(2)} KiB each (VmRSS delta / K)`);
    // the MESSAGE frame a member gets for one of these sends: the baseline writes frames of its size
    const frameBytes = Frame.encode({
      requestId: 0n,
      body: { $case: "message", message: { group: randomUUID(), conversationSeq: 1n, messageId: randomUUID(), sender: fanOwner, createdAtMs: BigInt(Date.now()), contentType: "application/octet-stream", payload, kind: "normal", mentions: [], state: "", targetSeq: 0n, targetMessageId: "", schemaVersion: 0, hiddenFromTimeline: false, preview: "" } },
    }).finish().length;
    out.fanout = { groupSize: FANOUT_GROUP_SIZE, online: ONLINE + 1, messages: FANOUT_MESSAGES, frameBytes };
    for (let r = 0; r < ROUNDS; r++) {
      const group = await createGroup(t, fanOwner, [...fanUsers, ...filler]);
      // a quiet node: the earlier rounds' fanout jobs (every member's list row and projection) done
      const waited = await quiet(store);
      const before = arrivalCount(fanIdle);
      const t0 = Date.now();
      await Promise.all(Array.from({ length: FANOUT_MESSAGES }, () => gatewaySend(fanSender!, group)()));
      // arrival times are stamped as frames come: how often this checks moves no figure, only this process's load
      await until("every online member has the fanout messages",
        () => arrivalCount(fanIdle) - before >= ONLINE * FANOUT_MESSAGES && firstArrivals(fanIdle, group).length >= ONLINE * FANOUT_MESSAGES, 50);
      const got = firstArrivals(fanIdle, group);
      const last = Math.max(...got.map((m) => m.arrivedAtMs));
      d.gw.push((ONLINE * FANOUT_MESSAGES) / ((last - t0) / 1000));
      // the push side alone: from the first commit (created_at) to the last arrival
      const e2e = got.map((m) => m.arrivedAtMs - m.createdAtMs);
      d.p50.push(quantile(e2e, 0.5)); d.p99.push(quantile(e2e, 0.99));
      d.gwFromCommit.push((ONLINE * FANOUT_MESSAGES) / (Math.max(1, last - Math.min(...got.map((m) => m.createdAtMs))) / 1000));
      await raw.reset();
      const r0 = Date.now();
      broadcaster.go(FANOUT_MESSAGES, frameBytes);
      const rawLast = await raw.waitFor(FANOUT_MESSAGES, ARRIVAL_TIMEOUT_MS);
      d.raw.push((IDLE * FANOUT_MESSAGES) / ((rawLast - r0) / 1000));
      say(`d. round ${r + 1} (after ${(waited / 1000).toFixed(1)} s for the node's earlier fanout jobs): gateway ${d.gw.at(-1)!.toFixed(0)} deliveries/s (${d.gwFromCommit.at(-1)!.toFixed(0)}/s from the commit), raw ws ${d.raw.at(-1)!.toFixed(0)}/s`);
    }
  } finally {
    raw?.close();
    broadcaster.stop();
  }
  Object.assign(out.fanout as object, {
    gatewayDeliveriesPerSec: Math.round(median(d.gw)), gatewayDeliveriesPerSecFromCommit: Math.round(median(d.gwFromCommit)), endToEndP50Ms: median(d.p50), endToEndP99Ms: median(d.p99), rawWsDeliveriesPerSec: Math.round(median(d.raw)), ratio: +(median(d.gw) / median(d.raw)).toFixed(3),
  });
} finally {
  for (const x of all) x.close();
  await runtime.stop();
  await store.close();
  await t.stop();
}

if (JSON_OUT) process.stdout.write(`${JSON.stringify(out)}\n`);
else {
  const o = out as { offline: Record<string, number>; online: Record<string, number>; idle: Record<string, number>; fanout: Record<string, number> };
  const rows = [
    ["a. sends, 20-member group, members offline", `${o.offline.gatewaySendsPerSec} sends/s, SEND_ACK p50 ${o.offline.sendAckP50Ms} ms p99 ${o.offline.sendAckP99Ms} ms`, `core ${o.offline.coreSendsPerSec} sends/s (p50 ${o.offline.coreP50Ms} p99 ${o.offline.coreP99Ms} ms)`, `${o.offline.ratio}× (goal ≥ 0.4)`],
    ["b. the same, 20 members online", `${o.online.deliveriesPerSec} deliveries/s (${o.online.sendsPerSec} sends/s), end to end p50 ${o.online.endToEndP50Ms} ms p99 ${o.online.endToEndP99Ms} ms`, "", ""],
    [`c. idle authenticated connections (${o.idle.connections})`, `${(o.idle.bytesPerConnection / 1024).toFixed(2)} KiB each (node VmRSS delta / K)`, `a bare ws server over TLS: ${(o.idle.bareWsTlsBytesPerConnection / 1024).toFixed(2)} KiB each (${o.idle.vsBareWsTls}×)`, "goal ≤ 10 KB"],
    [`d. fanout, ${o.fanout.groupSize}-member group, K=${o.fanout.online} online, ${o.fanout.messages} messages`, `${o.fanout.gatewayDeliveriesPerSec} deliveries/s from the send (${o.fanout.gatewayDeliveriesPerSecFromCommit}/s from the commit), end to end p50 ${o.fanout.endToEndP50Ms} ms p99 ${o.fanout.endToEndP99Ms} ms`, `raw ws broadcast ${o.fanout.rawWsDeliveriesPerSec}/s (${o.fanout.frameBytes} B frames)`, `${o.fanout.ratio}× (goal ≥ 0.5)`],
  ];
  const w = [0, 1, 2].map((i) => Math.max(...rows.map((r) => r[i]!.length)));
  for (const r of rows) process.stdout.write(`${r.map((c, i) => (i < 3 ? c.padEnd(w[i]!) : c)).join("  ")}\n`);
}
