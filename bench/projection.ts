/**
 * bench/projection — the session projection, from one run on one private redis-server:
 *   1. The registration script (lua/projectEntries-n.lua: per entry ZADD GT + RPUSH when new) in
 *      batches of B entries, C calls in flight, next to a baseline measured in the same run: a plain
 *      pipeline of one `ZADD key GT score member` per entry, same entries, same key shapes (identical
 *      copies of the users' convs zsets under one key prefix per path). Five paths:
 *        zadd-raw    pipelined ZADD GT, RESP prebuilt and written to a raw socket (Redis's own cost)
 *        script-raw  EVALSHA projectEntries, RESP prebuilt, raw socket (the script's Redis cost)
 *        zadd        a plain ioredis client, one pipeline of ZADD GT per batch (the baseline)
 *        script      core's callScript(projectEntries) on the store's client, args prebuilt
 *        writer      ProjectionWriter.project(records) end to end (DispatchRecord objects: user keys,
 *                    blake3 routing, pending items built in JS)
 *      Mixes: 10 % new members (steady state), all new, all existing. Reported: wall µs per entry,
 *      Node and Redis CPU µs per entry, Redis command time per entry, ratios (target ≤ 2×).
 *   2. Rebuild throughput: UserSessionProjection.rebuildUser(tenant, user, {force: true}) for users with 50
 *      and with 5,000 conversations, on the Redis-hash authority and on Cassandra (a node of
 *      test/harness/cassandra.ts, or QIM_TEST_CASSANDRA=host:port), next to the authority read alone.
 * Rounds alternate the paths so that machine noise hits all alike; medians are printed.
 * Usage: node dist/bench/projection.js [--rounds R] [--entries N] [--inflight C] [--batches 64,512]
 *          [--convs-per-user K] [--users50 N] [--users5000 N] [--rebuild-inflight C] [--no-cassandra]
 *          [--only registration|rebuild] [--paths zadd-raw,script-raw,zadd,script,writer] [--json]
 */
import { readFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import v8 from "node:v8";
import vm from "node:vm";
import { Redis } from "ioredis";
import {
  callScript, CassandraAuthority, encodeHistoryEntry, encodeRegistration, ConversationService, KeySpace, loadScripts, ProjectionStack, ProjectionWriter, RedisHashAuthority,
  RedisStore, RedisStreamsDispatchLog, uuidToHex,
  type ConversationStateAuthority, type DispatchRecord, type RegistrationItem, type Uuid,
} from "../core/index.js";
import { startRedis } from "../test/harness/redis.js";
import { userKeys } from "../core/index.js";
import { UserKeys, ucsPendingKey } from "../core/index.js";
import { newUuid } from "../core/index.js";
import { flag } from "./args.js";
import { redisCpuSeconds } from "./redis-stats.js";

const args = process.argv.slice(2);
const JSON_ONLY = args.includes("--json");
const ROUNDS = flag("--rounds", 3);
const ENTRIES = flag("--entries", 24000);
const INFLIGHT = flag("--inflight", 12);
const BATCHES = (() => {
  const i = args.indexOf("--batches");
  return i >= 0 ? args[i + 1]!.split(",").map(Number) : [64, 512];
})();
const USERS = 4096;
const CONVS_PER_USER = flag("--convs-per-user", 40);
const MEMBERS = 8; // recipients per record (a group of 8)
const USERS_50 = flag("--users50", 400);
const USERS_5000 = flag("--users5000", 16);
const REBUILD_INFLIGHT = flag("--rebuild-inflight", 8);
const CASSANDRA = !args.includes("--no-cassandra");
/** --only registration | rebuild: one part (profiling) */
const ONLY = (() => {
  const i = args.indexOf("--only");
  return i >= 0 ? args[i + 1] : undefined;
})();

const say = (line: string) => { if (!JSON_ONLY) console.log(line); };
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const r2 = (x: number) => +x.toFixed(2);
const fmt = (x: number, w = 7) => x.toFixed(2).padStart(w);
const perConv = (xs: { node: number; redis: number; jvm: number }[], n: number) =>
  ({ node: r2(median(xs.map((x) => x.node)) / n), redis: r2(median(xs.map((x) => x.redis)) / n), jvm: r2(median(xs.map((x) => x.jvm)) / n) });

async function pool(total: number, concurrency: number, op: (i: number) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(concurrency, total) }, async () => {
    for (;;) {
      const i = next++;
      if (i >= total) return;
      await op(i);
    }
  }));
}

interface Cost {
  /** elapsed */
  wall: number;
  /** CPU of this Node process (user + sys) */
  node: number;
  /** CPU of the redis-server process (INFO cpu: used_cpu_user + used_cpu_sys) */
  redis: number;
  /** time Redis spent executing commands (INFO commandstats usec, summed over top-level commands): parsing and I/O excluded */
  exec: number;
  /** of which inside a script: the ZADD and RPUSH the script called */
  inner: number;
}

async function commandUsec(client: Redis): Promise<Record<string, number>> {
  const info = await client.info("commandstats");
  const out: Record<string, number> = {};
  for (const m of info.matchAll(/^cmdstat_([a-z|]+):calls=\d+,usec=(\d+)/gm)) out[m[1]!] = Number(m[2]);
  return out;
}

// a full GC before each timed section, so that one path does not pay for the garbage of the last
v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;

/** Wall, Node CPU, Redis CPU and Redis command time of one timed section, in µs. */
async function measure(client: Redis, fn: () => Promise<void>): Promise<Cost> {
  gc();
  await client.config("RESETSTAT");
  const r0 = await redisCpuSeconds(client);
  const c0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  await fn();
  const wall = Number(process.hrtime.bigint() - t0) / 1e3;
  const c = process.cpuUsage(c0);
  const redis = (await redisCpuSeconds(client)) - r0;
  const u = await commandUsec(client);
  const scripted = (u.evalsha ?? 0) + (u.eval ?? 0);
  const exec = scripted > 0 ? scripted : (u.zadd ?? 0);
  const inner = scripted > 0 ? (u.zadd ?? 0) + (u.rpush ?? 0) : 0;
  return { wall, node: c.user + c.system, redis: redis * 1e6, exec, inner };
}

const TEXT = "benchmark message of a typical size, about sixty bytes long..";
const PAYLOAD = Buffer.from(TEXT);

/** A bare RESP connection: writes prebuilt commands, sums the integer replies of each write. */
class RawPipe {
  private readonly waiting: { left: number; sum: number; error: string | null; resolve: (n: number) => void; reject: (e: Error) => void }[] = [];
  private rest = "";

  private constructor(private readonly sock: net.Socket) {
    sock.setNoDelay(true);
    sock.on("data", (chunk: Buffer) => this.onData(chunk));
    sock.on("error", (err) => { for (const w of this.waiting.splice(0)) w.reject(err); });
  }

  static connect(host: string, port: number): Promise<RawPipe> {
    return new Promise((resolve, reject) => {
      const sock = net.connect({ host, port }, () => resolve(new RawPipe(sock)));
      sock.once("error", reject);
    });
  }

  /** Writes `payload` holding `replies` commands whose replies are integers; resolves their sum. */
  send(payload: Buffer, replies: number): Promise<number> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ left: replies, sum: 0, error: null, resolve, reject });
      this.sock.write(payload);
    });
  }

  private onData(chunk: Buffer): void {
    const s = this.rest + chunk.toString("latin1");
    let i = 0;
    for (;;) {
      const j = s.indexOf("\r\n", i);
      if (j < 0) break;
      const w = this.waiting[0];
      if (!w) throw new Error(`unexpected reply ${s.slice(i, j)}`);
      if (s[i] === ":") w.sum += Number(s.slice(i + 1, j));
      else w.error ??= s.slice(i, j);
      i = j + 2;
      if (--w.left === 0) {
        this.waiting.shift();
        if (w.error) w.reject(new Error(w.error)); else w.resolve(w.sum);
      }
    }
    this.rest = s.slice(i);
  }

  close(): void {
    this.sock.destroy();
  }
}

function resp(parts: string[]): string {
  let out = `*${parts.length}\r\n`;
  for (const p of parts) out += `$${Buffer.byteLength(p)}\r\n${p}\r\n`;
  return out;
}

const PATH_NAME = { zaddRaw: "zadd-raw", scriptRaw: "script-raw", zadd: "zadd", script: "script", writer: "writer" } as const;
const ALL_PATHS = ["zaddRaw", "scriptRaw", "zadd", "script", "writer"] as const;
type Path = (typeof ALL_PATHS)[number];
/** --paths zadd,writer: only these (profiling); names as printed */
const PATHS: readonly Path[] = (() => {
  const i = args.indexOf("--paths");
  if (i < 0) return ALL_PATHS;
  const want = args[i + 1]!.split(",");
  return ALL_PATHS.filter((p) => want.includes(PATH_NAME[p]));
})();
/** What each path's ratio is taken against. */
const VERSUS: Partial<Record<Path, Path>> = { scriptRaw: "zaddRaw", zadd: "zaddRaw", script: "zadd", writer: "zadd" };
const PREFIX: Record<Path, string> = { zaddRaw: "pa", scriptRaw: "pb", zadd: "pc", script: "pd", writer: "pe" };

async function registrationBench(client: Redis, plain: Redis, raw: RawPipe, sha: string, writer: ProjectionWriter): Promise<Record<string, unknown>[]> {
  const tenant = newUuid();
  const users: Uuid[] = Array.from({ length: USERS }, () => newUuid());
  // identical copies of the projection, one per path
  const spaces = Object.fromEntries(PATHS.map((p) => [p, new KeySpace(PREFIX[p])])) as Record<Path, KeySpace>;
  const ukeys = Object.fromEntries(PATHS.map((p) => [p, users.map((u) => userKeys(spaces[p], tenant, u))])) as Record<Path, UserKeys[]>;

  // groups of MEMBERS users; every member has the group's conversation in its set
  let clock = Date.now() - 1e9;
  const groupCount = Math.round((USERS * CONVS_PER_USER) / MEMBERS);
  const pick = () => {
    const s = new Set<number>();
    while (s.size < MEMBERS) s.add(Math.floor(Math.random() * USERS));
    return [...s];
  };
  const groups: { conv: Uuid; hex: string; members: number[] }[] = [];
  for (let g = 0; g < groupCount; g++) {
    const conv = newUuid();
    groups.push({ conv, hex: uuidToHex(conv), members: pick() });
  }
  const t0 = Date.now();
  const byUser: (string | number)[][] = users.map(() => []);
  for (const gr of groups) for (const m of gr.members) byUser[m]!.push(clock++, gr.hex);
  for (const p of PATHS) {
    for (let u = 0; u < USERS; u += 256) {
      const pl = client.pipeline();
      for (let v = u; v < Math.min(USERS, u + 256); v++) pl.zadd(ukeys[p][v]!.convs, ...(byUser[v] as [number, string]));
      await pl.exec();
    }
  }
  say(`redis ${String((await client.info("server")).match(/redis_version:(\S+)/)?.[1])}; ${USERS} users × ~${CONVS_PER_USER} conversations (groups of ${MEMBERS}) under ${PATHS.length} key prefixes, populated in ${Date.now() - t0} ms`);

  interface Rec { conv: Uuid; hex: string; members: number[]; createdAt: number; isNew: boolean; items?: Map<number, string> }
  /** Messages to groups: an existing group (every member has it), or a new conversation (no member has it). */
  const makeRecords = (newFrac: number, entries: number): Rec[] => {
    const recs: Rec[] = [];
    for (let i = 0; i < Math.ceil(entries / MEMBERS); i++) {
      const isNew = Math.floor((i + 1) * newFrac) > Math.floor(i * newFrac);
      if (isNew) {
        const conv = newUuid();
        recs.push({ conv, hex: uuidToHex(conv), members: pick(), createdAt: clock++, isNew });
      } else {
        const g = groups[Math.floor(Math.random() * groupCount)]!;
        recs.push({ conv: g.conv, hex: g.hex, members: g.members, createdAt: clock++, isNew });
      }
    }
    return recs;
  };

  /** One pass of one path over the records in batches of `batch` entries (args prebuilt, untimed). */
  const runPath = async (path: Path, recs: Rec[], batch: number): Promise<{ registered: number; cost: Cost }> => {
    const uk = ukeys[path];
    let registered = 0;
    if (path === "writer") {
      const perCall = Math.max(1, Math.floor(batch / MEMBERS));
      const calls: DispatchRecord[][] = [];
      for (let i = 0; i < recs.length; i += perCall) {
        calls.push(recs.slice(i, i + perCall).map((r, j) => ({
          tenant, conversation: r.conv, conversationSeq: i + j + 1, version: 1,
          entry: encodeHistoryEntry({
            conversationSeq: i + j + 1, messageId: newUuid(), senderId: users[r.members[0]!]!, kind: "normal", countsUnread: true, createdAt: r.createdAt,
            contentType: "text/plain", payload: PAYLOAD,
          }),
          recipients: r.members.map((m) => users[m]!), chunk: 0,
        })));
      }
      const cost = await measure(client, () => pool(calls.length, INFLIGHT, async (c) => { const n = await writer.project(calls[c]!); registered += n; }));
      return { registered, cost };
    }
    const flat: { key: string; pending: string; hex: string; at: string; item: string }[] = [];
    for (const r of recs) {
      // the pending items do not depend on the key prefix: built once per record set
      const items = (r.items ??= new Map(r.members.map((m) => [m, encodeRegistration({ tenant, user: users[m]!, conversation: r.conv, kind: "group", firstSeenAt: r.createdAt })])));
      for (const m of r.members) {
        flat.push({ key: uk[m]!.convs, pending: uk[m]!.ucsPending, hex: r.hex, at: String(r.createdAt), item: items.get(m)! });
      }
    }
    const batches = Array.from({ length: Math.ceil(flat.length / batch) }, (_, b) => flat.slice(b * batch, (b + 1) * batch));
    const scriptArgs = (es: typeof flat) => {
      const keys: string[] = [];
      const argv: string[] = [];
      for (const e of es) { keys.push(e.key, e.pending); argv.push(e.hex, e.at, e.item); }
      return { keys, argv };
    };
    let cost: Cost;
    switch (path) {
      case "zaddRaw": {
        const payloads = batches.map((es) => Buffer.from(es.map((e) => resp(["ZADD", e.key, "GT", e.at, e.hex])).join(""), "latin1"));
        cost = await measure(client, () => pool(batches.length, INFLIGHT, async (b) => { const n = await raw.send(payloads[b]!, batches[b]!.length); registered += n; }));
        break;
      }
      case "scriptRaw": {
        const payloads = batches.map((es) => {
          const { keys, argv } = scriptArgs(es);
          return Buffer.from(resp(["EVALSHA", sha, String(keys.length), ...keys, ...argv]), "latin1");
        });
        cost = await measure(client, () => pool(batches.length, INFLIGHT, async (b) => { const n = await raw.send(payloads[b]!, 1); registered += n; }));
        break;
      }
      case "zadd":
        cost = await measure(client, () => pool(batches.length, INFLIGHT, async (b) => {
          const pl = plain.pipeline();
          for (const e of batches[b]!) pl.zadd(e.key, "GT", e.at, e.hex);
          for (const [err, n] of (await pl.exec()) ?? []) { if (err) throw err; registered += Number(n); }
        }));
        break;
      case "script": {
        const calls = batches.map(scriptArgs);
        cost = await measure(client, () => pool(batches.length, INFLIGHT, async (b) => {
          const r = await callScript(client, "projectEntries", calls[b]!.keys, calls[b]!.argv);
          registered += Number(r[0]);
        }));
        break;
      }
    }
    return { registered, cost };
  };

  /** Puts every copy back to its populated state: the new members out, the pending queues empty. */
  const cleanup = async (recs: Rec[]) => {
    const fresh = recs.filter((r) => r.isNew);
    for (const p of PATHS) {
      for (let i = 0; i < fresh.length; i += 250) {
        const pl = client.pipeline();
        for (const r of fresh.slice(i, i + 250)) for (const m of r.members) pl.zrem(ukeys[p][m]!.convs, r.hex);
        await pl.exec();
      }
    }
    const pl = client.pipeline();
    for (let b = 0; b < 256; b++) for (const p of PATHS) pl.del(ucsPendingKey(spaces[p], b));
    await pl.exec();
  };

  const MIXES = [{ name: "10% new", newFrac: 0.1 }, { name: "all new", newFrac: 1 }, { name: "all existing", newFrac: 0 }];
  const samples = new Map<string, Record<Path, Cost[]>>();
  const tp = Date.now();
  // warm-up (script load on each connection, JIT)
  for (const batch of BATCHES) {
    const recs = makeRecords(0.1, 4 * batch * INFLIGHT);
    for (const p of PATHS) await runPath(p, recs, batch);
    await cleanup(recs);
  }
  let mismatch = "";
  for (let round = 0; round < ROUNDS; round++) {
    for (const mix of MIXES) {
      for (const batch of BATCHES) {
        const recs = makeRecords(mix.newFrac, ENTRIES);
        const n = recs.length * MEMBERS;
        const expected = recs.filter((r) => r.isNew).length * MEMBERS;
        const key = `${mix.name}|${batch}`;
        if (!samples.has(key)) samples.set(key, Object.fromEntries(PATHS.map((p) => [p, []])) as unknown as Record<Path, Cost[]>);
        const s = samples.get(key)!;
        // rotate the order every round: no path always runs first or last
        for (const p of PATHS.map((_, i) => PATHS[(i + round) % PATHS.length]!)) {
          const { registered, cost } = await runPath(p, recs, batch);
          if (registered !== expected) mismatch += `${p} ${key}: ${registered} new, expected ${expected}; `;
          s[p].push({ wall: cost.wall / n, node: cost.node / n, redis: cost.redis / n, exec: cost.exec / n, inner: cost.inner / n });
        }
        await cleanup(recs);
      }
    }
  }
  if (mismatch) throw new Error(`new-member counts differ from the records: ${mismatch}`);

  const rows: Record<string, unknown>[] = [];
  say(`\n1. Registration, µs per entry (medians of ${ROUNDS} rounds; ${Math.ceil(ENTRIES / MEMBERS) * MEMBERS} entries per pass, ${INFLIGHT} calls in flight; ${((Date.now() - tp) / 1000).toFixed(0)} s)`);
  say(`   wall = elapsed / entries; node, redis = CPU of each process (redis: INFO cpu); exec = Redis command time (INFO commandstats:`);
  say(`   ZADD, or EVALSHA incl. its inner calls), inner = the ZADD + RPUSH the script called. Ratios: script-raw and zadd vs zadd-raw, script and writer vs zadd.`);
  say(`   mix          batch  path          wall    node   redis    exec   inner |  ×wall ×redis  ×exec`);
  for (const mix of MIXES) {
    for (const batch of BATCHES) {
      const s = samples.get(`${mix.name}|${batch}`)!;
      const m = (p: Path, f: keyof Cost) => median(s[p].map((c) => c[f]));
      const row: Record<string, unknown> = { mix: mix.name, batch };
      PATHS.forEach((p, i) => {
        const vs = VERSUS[p] && PATHS.includes(VERSUS[p]) ? VERSUS[p] : undefined;
        const v = {
          wallUs: r2(m(p, "wall")), nodeCpuUs: r2(m(p, "node")), redisCpuUs: r2(m(p, "redis")), execUs: r2(m(p, "exec")), innerUs: r2(m(p, "inner")),
          ...(vs ? { vs: PATH_NAME[vs], ratioWall: r2(m(p, "wall") / m(vs, "wall")), ratioRedisCpu: r2(m(p, "redis") / m(vs, "redis")), ratioExec: r2(m(p, "exec") / m(vs, "exec")) } : {}),
        };
        row[PATH_NAME[p]] = v;
        const ratios = vs ? `${fmt(v.ratioWall!, 6)} ${fmt(v.ratioRedisCpu!, 6)} ${fmt(v.ratioExec!, 6)}` : "";
        const inner = p === "script" || p === "scriptRaw" || p === "writer" ? fmt(v.innerUs, 7) : " ".repeat(7);
        say(`   ${(i === 0 ? mix.name : "").padEnd(12)} ${(i === 0 ? String(batch) : "").padStart(5)}  ${PATH_NAME[p].padEnd(10)} ${fmt(v.wallUs, 7)} ${fmt(v.nodeCpuUs, 7)} ${fmt(v.redisCpuUs, 7)} ${fmt(v.execUs, 7)} ${inner} | ${ratios}`);
      });
      rows.push(row);
    }
  }
  say(`   target: script ≤ 2× a plain pipelined ZADD GT per entry (spec measured 5.7–6.1 µs vs 0.9 µs)`);
  return rows;
}

async function main() {
  const server = await startRedis();
  const store = new RedisStore({ kind: "instances", addrs: [server.addr] });
  const client = store.clients()[0] as Redis;
  const out: Record<string, unknown> = {
    redis: (await client.info("server")).match(/redis_version:(\S+)/)?.[1],
    loadAvgAtStart: os.loadavg().map(r2), rounds: ROUNDS, entries: ENTRIES, inflight: INFLIGHT, users: USERS, convsPerUser: CONVS_PER_USER, recipientsPerRecord: MEMBERS,
  };
  let stopCassandra: (() => Promise<void>) | undefined;
  try {
    if (ONLY !== "rebuild") {
      const plain = new Redis({ host: server.host, port: server.port });
      const raw = await RawPipe.connect(server.host, server.port);
      const script = loadScripts().get("projectEntries")!;
      const sha = String(await client.script("LOAD", script.lua));
      try {
        const rows = await registrationBench(client, plain, raw, sha, new ProjectionWriter(store, new KeySpace(PREFIX.writer)));
        out.registration = rows;
        // wall µs per entry, every mix × batch: script-raw / zadd-raw (Redis side), script / zadd (through ioredis), writer / zadd-raw (end to end vs Redis's floor)
        const w = (r: Record<string, unknown>, p: string) => (r[p] as { wallUs: number } | undefined)?.wallUs ?? NaN;
        out.ratios = Object.fromEntries(rows.map((r) => [`${String(r.mix)}|${String(r.batch)}`, {
          scriptRawVsZaddRaw: r2(w(r, "script-raw") / w(r, "zadd-raw")),
          scriptVsZadd: r2(w(r, "script") / w(r, "zadd")),
          writerVsZadd: r2(w(r, "writer") / w(r, "zadd")),
          writerVsZaddRaw: r2(w(r, "writer") / w(r, "zadd-raw")),
        }]));
        for (const [k, v] of Object.entries(out.ratios as Record<string, Record<string, number>>)) {
          say(`   ${k.padEnd(17)} wall ratios: script-raw/zadd-raw ${fmt(v.scriptRawVsZaddRaw!, 5)}   script/zadd ${fmt(v.scriptVsZadd!, 5)}   writer/zadd ${fmt(v.writerVsZadd!, 5)}   writer/zadd-raw ${fmt(v.writerVsZaddRaw!, 5)}`);
        }
      } finally {
        plain.disconnect();
        raw.close();
      }
      // free part 1 before part 2
      await client.flushall();
    }

    // ---------------------------------------------------------------------------------------------
    // 2. rebuild
    const engine = new ConversationService(store, { keyPrefix: "rb" });
    const log = new RedisStreamsDispatchLog(store, engine.keys, { clusterId: "bench", topicId: "dispatch", partitionCount: 4 });
    const SHAPES = [{ convs: 50, users: USERS_50 }, { convs: 5000, users: USERS_5000 }];

    /** CPU µs of this process, redis-server and (when known) the Cassandra JVM, for one timed section. */
    const cpuOf = async (jvmPid: number | undefined) => {
      const jvm = () => {
        if (jvmPid === undefined) return NaN;
        try {
          const f = readFileSync(`/proc/${jvmPid}/stat`, "utf8").split(") ")[1]!.split(" ");
          return ((Number(f[11]) + Number(f[12])) / 100) * 1e6; // utime + stime, clock ticks of 10 ms
        } catch {
          return NaN;
        }
      };
      const n0 = process.cpuUsage();
      const r0 = await redisCpuSeconds(client);
      const j0 = jvm();
      return async () => {
        const n = process.cpuUsage(n0);
        return { node: n.user + n.system, redis: ((await redisCpuSeconds(client)) - r0) * 1e6, jvm: jvm() - j0 };
      };
    };

    const rebuildBench = async (authority: ConversationStateAuthority, jvmPid?: number) => {
      const stack = new ProjectionStack({ store, keys: engine.keys, conversations: engine, log, authority }, { background: false });
      const sessions = stack.sessions;
      const res: Record<string, unknown>[] = [];
      for (const shape of SHAPES) {
        const rtenant = newUuid();
        const rusers = Array.from({ length: shape.users }, () => newUuid());
        const tr = process.hrtime.bigint();
        // registered in batches of ≤ 250 rows per user (one Cassandra unlogged batch each)
        const items: RegistrationItem[][] = [];
        for (const user of rusers) {
          let at = Date.now() - 1e8;
          const mine = Array.from({ length: shape.convs }, () => ({ tenant: rtenant, user, conversation: newUuid(), kind: "group" as const, firstSeenAt: at++ }));
          for (let i = 0; i < mine.length; i += 250) items.push(mine.slice(i, i + 250));
        }
        await pool(items.length, REBUILD_INFLIGHT, (i) => authority.register(items[i]!));
        const regRate = (shape.users * shape.convs) / (Number(process.hrtime.bigint() - tr) / 1e9);
        const rebuild: number[] = [];
        const read: number[] = [];
        const lat: number[] = [];
        const rebuildCpu: { node: number; redis: number; jvm: number }[] = [];
        const readCpu: { node: number; redis: number; jvm: number }[] = [];
        const n = shape.users * shape.convs;
        const doRebuild = async (count: boolean) => {
          await pool(rusers.length, 16, (i) => sessions.wipeUser(rtenant, rusers[i]!));
          const cpu = await cpuOf(jvmPid);
          const t = process.hrtime.bigint();
          let merged = 0;
          await pool(rusers.length, REBUILD_INFLIGHT, async (i) => {
            const s = process.hrtime.bigint();
            const r = await sessions.rebuildUser(rtenant, rusers[i]!, { force: true });
            if (count) lat.push(Number(process.hrtime.bigint() - s) / 1e6);
            merged += r.merged;
          });
          const rate = merged / (Number(process.hrtime.bigint() - t) / 1e9);
          const used = await cpu();
          if (count) { rebuild.push(rate); rebuildCpu.push(used); }
          if (merged !== n) throw new Error(`rebuild merged ${merged} conversations, expected ${n}`);
          const k = userKeys(engine.keys, rtenant, rusers[0]!);
          const card = await engine.store.clientFor(k.tag).zcard(k.convs);
          if (card !== shape.convs) throw new Error(`a rebuilt user has ${card} conversations, expected ${shape.convs}`);
        };
        const doRead = async (count: boolean) => {
          const cpu = await cpuOf(jvmPid);
          const t = process.hrtime.bigint();
          let rows = 0;
          await pool(rusers.length, REBUILD_INFLIGHT, async (i) => { const got = await authority.conversations(rtenant, rusers[i]!); rows += got.length; });
          const rate = rows / (Number(process.hrtime.bigint() - t) / 1e9);
          const used = await cpu();
          if (count) { read.push(rate); readCpu.push(used); }
          if (rows !== n) throw new Error(`the authority returned ${rows} rows, expected ${n}`);
        };
        // round 0 is a warm-up (JIT of both processes, prepared statements, a freshly started JVM): not
        // counted; then the order alternates so that a trend (JIT, compaction) does not favour one side
        for (let round = 0; round <= ROUNDS; round++) {
          if (round % 2 === 0) { await doRebuild(round > 0); await doRead(round > 0); }
          else { await doRead(true); await doRebuild(true); }
        }
        const row = {
          authority: authority.kind, convsPerUser: shape.convs, users: shape.users,
          rebuildConvsPerSec: Math.round(median(rebuild)),
          rebuildUsersPerSec: r2(median(rebuild) / shape.convs),
          userP50Ms: r2(median(lat)),
          authorityReadConvsPerSec: Math.round(median(read)),
          readShare: r2(median(rebuild) / median(read)),
          registerRowsPerSec: Math.round(regRate),
          // CPU µs per conversation (medians): this process, redis-server, the Cassandra JVM (when started here)
          rebuildCpuUsPerConv: perConv(rebuildCpu, shape.users * shape.convs),
          readCpuUsPerConv: perConv(readCpu, shape.users * shape.convs),
        };
        res.push(row);
        say(`   ${authority.kind.padEnd(9)} ${String(shape.convs).padStart(5)} conv/user × ${String(shape.users).padStart(4)} users | rebuild ${String(row.rebuildConvsPerSec).padStart(8)} conv/s (${fmt(row.rebuildUsersPerSec, 8)} users/s, p50 ${fmt(row.userP50Ms, 7)} ms/user) | authority read alone ${String(row.authorityReadConvsPerSec).padStart(8)} conv/s (read ≈ ${Math.round(100 * row.readShare)} % of rebuild time) | register ${row.registerRowsPerSec} rows/s`);
        const cpu = (c: { node: number; redis: number; jvm: number }) => `node ${fmt(c.node, 5)}  redis ${fmt(c.redis, 5)}${Number.isNaN(c.jvm) ? "" : `  cassandra ${fmt(c.jvm, 5)}`}`;
        say(`   ${" ".repeat(41)}CPU µs per conversation: rebuild ${cpu(row.rebuildCpuUsPerConv)} | read alone ${cpu(row.readCpuUsPerConv)}`);
      }
      return res;
    };

    if (ONLY !== "registration") say(`\n2. Rebuild: sessions.rebuildUser(force) after wipeUser, ${REBUILD_INFLIGHT} users in flight (medians of ${ROUNDS} rounds after a warm-up round)`);
    const rebuilds: Record<string, unknown>[] = [];
    if (ONLY !== "registration") rebuilds.push(...(await rebuildBench(new RedisHashAuthority(store, engine.keys))));
    if (CASSANDRA && ONLY !== "registration") {
      const { sharedCassandra, startCassandra, uniqueKeyspace } = await import("../test/harness/cassandra.js");
      const tc = Date.now();
      let contactPoint: string;
      let localDataCenter: string;
      let jvmPid: number | undefined;
      if (process.env.QIM_TEST_CASSANDRA) {
        ({ contactPoint, localDataCenter } = await sharedCassandra());
      } else {
        const node = await startCassandra();
        stopCassandra = () => node.stop();
        jvmPid = node.pid;
        ({ contactPoint, localDataCenter } = node);
        say(`   (Cassandra ${node.version} started in ${((Date.now() - tc) / 1000).toFixed(0)} s)`);
      }
      const keyspace = uniqueKeyspace("bench_projection");
      const authority = new CassandraAuthority({ contactPoints: [contactPoint], localDataCenter, keyspace });
      await authority.init();
      try {
        rebuilds.push(...(await rebuildBench(authority, jvmPid)));
        out.cassandra = { contactPoint, keyspace };
      } finally {
        await authority.close();
      }
    } else if (ONLY !== "registration") {
      say(`   cassandra: skipped (--no-cassandra)`);
      out.cassandra = "skipped";
    }
    out.rebuild = rebuilds;
  } finally {
    await store.close();
    await server.stop();
    if (stopCassandra) await stopCassandra();
  }
  out.loadAvgAtEnd = os.loadavg().map(r2);
  say(`\nload average at start ${(out.loadAvgAtStart as number[]).join(" ")}, at end ${(out.loadAvgAtEnd as number[]).join(" ")} (2 cores)`);
  console.log(JSON.stringify(out));
}

main().catch((err) => { console.error(err); process.exit(1); });
