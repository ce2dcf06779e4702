/**
 * bench/gateway — the client gateway (issue 27) on a real qim-node process (TLS, device tokens),
 * against baselines taken in the same run on the same redis-server:
 *   send-offline  SENDs through the gateway into one 20-member group, 64 in flight, the other members
 *                 offline: sends/s and SEND_ACK p50/p99 — one device with 64 in flight (a device's
 *                 SENDs commit in order, one after another) and 8 devices of 8 members with 8 each;
 *                 against core alone (ConversationService.send in this process, 64 in flight, on a
 *                 key prefix of its own, no relay): the ratio gateway/core (goal ≥ 0.4×);
 *   send-online   the same with all 20 members online: deliveries/s (MESSAGE frames received by the
 *                 20 devices, after dedupe) and end-to-end p50/p99 (created_at_ms of the commit to the
 *                 frame's arrival here, one host clock);
 *   idle          memory per idle authenticated connection: the node's RSS (/proc) before and after
 *                 N devices connected and AUTHed, divided by N (goal ≤ 10 KB).
 * Rounds alternate the gateway and core phases; medians are printed. The bench raises nothing: it
 * needs 2 × N + 100 open files (N idle devices, both ends here) and says so when the limit is lower.
 * Usage: node dist/bench/gateway.js [--sends N] [--rounds R] [--idle N] [--json] [--server-cpu-prof DIR]
 */
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import WebSocket from "ws";
import { Frame } from "../admin-api/gen/qim/client/v1/frames.js";
import { ConversationService, DeviceTokens, generateTokenKey, KeySpace, parseTokenKeySet, RedisStore, rotateTokenKeys, staticTokenKeys, type Uuid } from "../core/index.js";
import { writeTestPki } from "../test/certs/fixture.js";
import { startRedis } from "../test/harness/redis.js";
import { startServerProcess } from "../test/reliability/server-process.js";
import { SERVER_NODE_FLAGS } from "../server/node-flags.js";
import { flag } from "./args.js";

const SENDS = flag("--sends", 2000);
const ROUNDS = flag("--rounds", 3);
const IDLE = flag("--idle", 2000);
const IN_FLIGHT = 64;
const MEMBERS = 20;
const JSON_ONLY = process.argv.includes("--json");
const say = (line: string) => { if (!JSON_ONLY) process.stderr.write(`${line}\n`); };
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const pct = (xs: number[], p: number) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(s.length * p))] ?? 0; };

/** A device: requests with ids, pushes kept with their arrival time. */
class Device {
  private nextId = 0n;
  private readonly waiting = new Map<bigint, (f: Frame) => void>();
  readonly arrivals: { messageId: string; createdAt: number; at: number }[] = [];
  private constructor(readonly ws: WebSocket) {
    ws.on("message", (data: Buffer) => {
      const f = Frame.decode(data);
      if (f.requestId !== 0n) {
        const w = this.waiting.get(f.requestId);
        this.waiting.delete(f.requestId);
        w?.(f);
      } else if (f.body?.$case === "message") {
        this.arrivals.push({ messageId: f.body.message.messageId, createdAt: Number(f.body.message.createdAtMs), at: Date.now() });
      }
    });
  }

  static async open(url: string, ca: Buffer, token: string, device: string): Promise<Device> {
    const ws = new WebSocket(url, ["qim.client.v1"], { ca, headers: { authorization: `Bearer ${token}` }, perMessageDeflate: false });
    await new Promise<void>((resolve, reject) => {
      ws.once("open", () => resolve());
      ws.once("error", reject);
      ws.once("unexpected-response", (_q, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
    });
    const d = new Device(ws);
    const a = await d.request({ $case: "auth", auth: { deviceId: device, clientVersion: "bench" } });
    if (a.body?.$case !== "authOk") throw new Error(`AUTH: ${JSON.stringify(a.body?.$case)}`);
    return d;
  }

  request(body: NonNullable<Frame["body"]>): Promise<Frame> {
    const id = ++this.nextId;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.ws.send(Frame.encode({ requestId: id, body }).finish());
    });
  }
}

/** `total` operations with `inFlight` lanes; per-operation latency (ms) and the rate. */
async function drive(total: number, inFlight: number, op: (i: number, lane: number) => Promise<void>): Promise<{ perSec: number; lat: number[] }> {
  let next = 0;
  const lat: number[] = [];
  const t0 = performance.now();
  await Promise.all(Array.from({ length: inFlight }, async (_, lane) => {
    while (next < total) {
      const i = next++;
      const s = performance.now();
      await op(i, lane);
      lat.push(performance.now() - s);
    }
  }));
  return { perSec: total / ((performance.now() - t0) / 1000), lat };
}

/** CPU time (ms) a process has used so far (/proc/PID/stat utime + stime). */
function cpuMs(pid: number): number {
  const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return ((Number(f[11]) + Number(f[12])) * 1000) / 100;
}

/** CPU ms per operation of the node, redis-server and this process over `fn` (what saturates, on 2 cores). */
async function cpuOf<T>(pids: { node: number; redis: number }, ops: number, fn: () => Promise<T>): Promise<{ value: T; node: number; redis: number; client: number }> {
  const b = { node: cpuMs(pids.node), redis: cpuMs(pids.redis), client: process.cpuUsage() };
  const value = await fn();
  const c = process.cpuUsage(b.client);
  return { value, node: (cpuMs(pids.node) - b.node) / ops, redis: (cpuMs(pids.redis) - b.redis) / ops, client: (c.user + c.system) / 1000 / ops };
}

function rssKiB(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) : NaN;
}

async function main(): Promise<void> {
  const limit = Number(readFileSync("/proc/self/limits", "utf8").split("\n").find((l) => l.startsWith("Max open files"))?.split(/\s+/)[3] ?? 0);
  const idle = Math.min(IDLE, Math.max(0, Math.floor((limit - 200) / 2)));
  if (idle < IDLE) say(`open-file limit ${limit}: the idle phase uses ${idle} devices instead of ${IDLE} (raise it with ulimit -n ${2 * IDLE + 200})`);
  const dir = await mkdtemp(join(tmpdir(), "qim-bench-gateway-"));
  const redis = await startRedis();
  const pki = await writeTestPki(join(dir, "pki"));
  const keysPath = join(dir, "token-keys.json");
  const keyText = (await rotateTokenKeys(null, await generateTokenKey("EdDSA"), keysPath)).text;
  await writeFile(keysPath, keyText, { mode: 0o600 });
  const profDir = process.argv.includes("--server-cpu-prof") ? process.argv[process.argv.indexOf("--server-cpu-prof") + 1] : undefined;
  const node = await startServerProcess({
    redisAddr: redis.addr, pki, auditLog: join(dir, "audit.log"),
    ...(profDir ? { nodeFlags: [...SERVER_NODE_FLAGS, "--cpu-prof", "--cpu-prof-dir", profDir] } : {}),
    extraArgs: ["--gateway-listen", "127.0.0.1:0", "--tokens-keys", keysPath],
  });
  const url = /client gateway on (wss:\/\/\S+)/.exec(await node.waitForLog(/client gateway on /))![1]!.replace("127.0.0.1", "localhost");
  const ca = readFileSync(pki.ca.certPath);
  const store = new RedisStore({ kind: "instances", addrs: [redis.addr] });
  const space = new KeySpace();
  const tokens = new DeviceTokens(store, space, { source: staticTokenKeys(await parseTokenKeySet(keyText, keysPath)) });
  const tenant = randomUUID() as Uuid;
  const issue = async (user: string, device: string) => (await tokens.issuer.issue({ tenant, user: user as Uuid, device, ttlMs: 3_600_000 })).token;
  // the node's engine (the default key prefix) and core alone on a prefix of its own
  const engine = new ConversationService(store);
  const core = new ConversationService(store, { keyPrefix: "benchcore" });
  const members = Array.from({ length: MEMBERS }, () => randomUUID());
  const coreMembers = Array.from({ length: MEMBERS }, () => randomUUID());
  const coreGroup = (await core.createGroup({ tenant, owner: coreMembers[0]!, members: coreMembers.slice(1) })).group;
  const payload = Buffer.from("x".repeat(64));
  let tag = 0;

  const rounds: Record<string, number>[] = [];
  try {
    for (let r = 1; r <= ROUNDS; r++) {
      const row: Record<string, number> = {};
      // core alone
      const pids = { node: node.pid, redis: redis.pid };
      const coreCpu = await cpuOf(pids, SENDS, () => drive(SENDS, IN_FLIGHT, async () => { await core.send({ tenant, group: coreGroup, sender: coreMembers[0]!, payload, contentType: "text/plain" }); }));
      const c = coreCpu.value;
      row.coreRedisCpuMs = coreCpu.redis;
      row.coreClientCpuMs = coreCpu.client;
      row.corePerSec = c.perSec;
      row.coreP50 = pct(c.lat, 0.5);
      row.coreP99 = pct(c.lat, 0.99);
      // the gateway, members offline: one device, 64 in flight
      const group = (await engine.createGroup({ tenant, owner: members[0]!, members: members.slice(1) })).group;
      const sender = await Device.open(url, ca, await issue(members[0]!, `s${r}`), `s${r}`);
      const sendVia = (d: Device, i: number) => d.request({ $case: "send", send: { clientMsgNo: `b${tag}-${i}`, group, payload, contentType: "text", mentions: [] } }).then((f) => {
        if (f.body?.$case !== "sendAck") throw new Error(`SEND: ${JSON.stringify(f.body)}`);
      });
      tag++;
      const oneCpu = await cpuOf(pids, SENDS, () => drive(SENDS, IN_FLIGHT, (i) => sendVia(sender, i)));
      const one = oneCpu.value;
      row.gwNodeCpuMs = oneCpu.node;
      row.gwRedisCpuMs = oneCpu.redis;
      row.gwClientCpuMs = oneCpu.client;
      row.gw1PerSec = one.perSec;
      row.gw1P50 = pct(one.lat, 0.5);
      row.gw1P99 = pct(one.lat, 0.99);
      // 8 devices of 8 members, 8 in flight each
      const eight = await Promise.all(members.slice(1, 9).map(async (m, k) => Device.open(url, ca, await issue(m, `e${r}-${k}`), `e${r}-${k}`)));
      tag++;
      const many = await drive(SENDS, IN_FLIGHT, (i, lane) => sendVia(eight[lane % 8]!, i));
      row.gw8PerSec = many.perSec;
      row.gw8P50 = pct(many.lat, 0.5);
      row.gw8P99 = pct(many.lat, 0.99);
      for (const d of [sender, ...eight]) d.ws.close();
      // all 20 online: every member's device receives every message
      const online = await Promise.all(members.map(async (m, k) => Device.open(url, ca, await issue(m, `o${r}-${k}`), `o${r}-${k}`)));
      tag++;
      const t0 = Date.now();
      const sent = await drive(SENDS, IN_FLIGHT, (i, lane) => sendVia(online[lane % 8]!, i));
      const want = SENDS * MEMBERS;
      for (let i = 0; i < 600 && online.reduce((n, d) => n + d.arrivals.length, 0) < want; i++) await new Promise((res) => setTimeout(res, 50));
      const all = online.flatMap((d) => d.arrivals);
      const lastAt = Math.max(...all.map((a) => a.at));
      const dedupe = online.reduce((n, d) => n + new Set(d.arrivals.map((a) => a.messageId)).size, 0);
      row.onlineSendPerSec = sent.perSec;
      row.deliveriesPerSec = dedupe / ((lastAt - t0) / 1000);
      row.deliveredShare = dedupe / want;
      const e2e = all.map((a) => a.at - a.createdAt);
      row.e2eP50 = pct(e2e, 0.5);
      row.e2eP99 = pct(e2e, 0.99);
      for (const d of online) d.ws.close();
      rounds.push(row);
      say(`round ${r}: core ${Math.round(row.corePerSec)}/s; gateway 1×64 ${Math.round(row.gw1PerSec)}/s, 8×8 ${Math.round(row.gw8PerSec)}/s; online: ${Math.round(row.deliveriesPerSec)} deliveries/s (${(row.deliveredShare * 100).toFixed(1)}%), e2e p99 ${row.e2eP99.toFixed(0)} ms`);
    }
    // idle connections
    await new Promise((res) => setTimeout(res, 1000));
    const before = rssKiB(node.pid);
    const idlers: Device[] = [];
    for (let i = 0; i < idle; i += 50) {
      idlers.push(...await Promise.all(Array.from({ length: Math.min(50, idle - i) }, async (_, k) => {
        const user = randomUUID();
        return Device.open(url, ca, await issue(user, `i${i + k}`), `i${i + k}`);
      })));
    }
    await new Promise((res) => setTimeout(res, 2000));
    const afterRss = rssKiB(node.pid);
    for (const d of idlers) d.ws.terminate();
    const m = (k: string) => median(rounds.map((x) => x[k]!));
    const out = {
      sends: SENDS, rounds: ROUNDS, inFlight: IN_FLIGHT, members: MEMBERS,
      core: { perSec: Math.round(m("corePerSec")), p50Ms: +m("coreP50").toFixed(2), p99Ms: +m("coreP99").toFixed(2) },
      gatewayOneDevice: { perSec: Math.round(m("gw1PerSec")), p50Ms: +m("gw1P50").toFixed(2), p99Ms: +m("gw1P99").toFixed(2), vsCore: +(median(rounds.map((x) => x.gw1PerSec! / x.corePerSec!))).toFixed(3) },
      cpuMsPerSend: {
        core: { redis: +m("coreRedisCpuMs").toFixed(3), thisProcess: +m("coreClientCpuMs").toFixed(3) },
        gateway: { node: +m("gwNodeCpuMs").toFixed(3), redis: +m("gwRedisCpuMs").toFixed(3), thisProcess: +m("gwClientCpuMs").toFixed(3) },
      },
      gatewayEightDevices: { perSec: Math.round(m("gw8PerSec")), p50Ms: +m("gw8P50").toFixed(2), p99Ms: +m("gw8P99").toFixed(2), vsCore: +(median(rounds.map((x) => x.gw8PerSec! / x.corePerSec!))).toFixed(3) },
      online: { sendsPerSec: Math.round(m("onlineSendPerSec")), deliveriesPerSec: Math.round(m("deliveriesPerSec")), deliveredShare: +m("deliveredShare").toFixed(4), e2eP50Ms: m("e2eP50"), e2eP99Ms: m("e2eP99") },
      idle: { connections: idle, rssBeforeKiB: before, rssAfterKiB: afterRss, bytesPerConnection: idle > 0 ? Math.round(((afterRss - before) * 1024) / idle) : null },
    };
    if (JSON_ONLY) process.stdout.write(`${JSON.stringify(out)}\n`);
    else {
      say("");
      say(`core alone              ${out.core.perSec}/s  p50 ${out.core.p50Ms} ms  p99 ${out.core.p99Ms} ms`);
      say(`gateway, 1 device × 64  ${out.gatewayOneDevice.perSec}/s  p50 ${out.gatewayOneDevice.p50Ms} ms  p99 ${out.gatewayOneDevice.p99Ms} ms  = ${out.gatewayOneDevice.vsCore}× core`);
      say(`  CPU ms a send: core: redis ${out.cpuMsPerSend.core.redis}, this process ${out.cpuMsPerSend.core.thisProcess}; gateway: node ${out.cpuMsPerSend.gateway.node}, redis ${out.cpuMsPerSend.gateway.redis}, this process (64 devices' client side) ${out.cpuMsPerSend.gateway.thisProcess}`);
      say(`gateway, 8 devices × 8  ${out.gatewayEightDevices.perSec}/s  p50 ${out.gatewayEightDevices.p50Ms} ms  p99 ${out.gatewayEightDevices.p99Ms} ms  = ${out.gatewayEightDevices.vsCore}× core (goal ≥ 0.4×)`);
      say(`20 online               ${out.online.deliveriesPerSec} deliveries/s (${(out.online.deliveredShare * 100).toFixed(2)}% delivered), end-to-end p50 ${out.online.e2eP50Ms} ms p99 ${out.online.e2eP99Ms} ms`);
      say(`idle                    ${out.idle.connections} connections: ${out.idle.bytesPerConnection} bytes each (node RSS ${out.idle.rssBeforeKiB} → ${out.idle.rssAfterKiB} KiB; goal ≤ 10 KB)`);
    }
  } finally {
    await store.close();
    await node.stop();
    await redis.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench/gateway: ${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
  process.exit(1);
});
