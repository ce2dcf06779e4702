/**
 * bench/unread-recompute — the conversation list's per-member cost of one message to a big group
 * (issue 22). On one private redis-server: a group filled by the engine's real add path
 * (ConversationService.addMembers, MAX_USERS_PER_MEMBERSHIP_CALL users a call: each call's join
 * event carries the ~21 KB payload of its 1,000 users), then one send, in one of three modes:
 *   settled  the list consumer settled after every add; the send, then one settle
 *   lagging  the adds and the send, then one settle (the consumer was behind the bulk add: every
 *            member's row is made after the send, by a recompute over the later join events)
 *   replay   as settled, then the list checkpoints are put back to before the send and the
 *            consumer reads it again (a crash or a lost lease between a flush and its checkpoint:
 *            every member's row sees the send as "not newer" and is recomputed)
 * Measured over what follows the adds (settled: the send; lagging: the send and the one settle;
 * replay: the second reading): the list's recomputes by cause (its metrics), and per command and
 * Lua script the calls, total, 99th percentile and longest time (SLOWLOG with threshold 0, so that every call is
 * logged; a script is named by the sha of its text).
 * Usage: node dist/bench/unread-recompute.js [--json] [--members N] [--mode settled|lagging|replay]
 */
import { Redis } from "ioredis";
import {
  EngineRuntime, KeySpace, listCheckpointKey, MAX_USERS_PER_MEMBERSHIP_CALL, newUuid, RedisHashAuthority, RedisStore, registry, type Uuid,
} from "../core/index.js";
import { startRedis } from "../test/harness/redis.js";
import { flag } from "./args.js";
import { scriptNamesBySha } from "./redis-stats.js";

const args = process.argv.slice(2);
const JSON_OUT = args.includes("--json");
const MEMBERS = flag("--members", 20_000);
const MODE = args.includes("--mode") ? args[args.indexOf("--mode") + 1]! : "replay";
if (!["settled", "lagging", "replay"].includes(MODE)) throw new Error(`--mode: settled, lagging or replay, not ${MODE}`);

async function recomputesByCause(): Promise<Record<string, number>> {
  const m = await registry.getSingleMetric("qim_conversation_list_recompute_total")!.get();
  const out: Record<string, number> = {};
  for (const v of m.values) out[String(v.labels.cause)] = v.value;
  return out;
}

function diff(after: Record<string, number>, before: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(after)) if (v - (before[k] ?? 0) > 0) out[k] = v - (before[k] ?? 0);
  return out;
}

async function main() {
  const server = await startRedis();
  const raw = new Redis({ host: server.host, port: server.port });
  const store = new RedisStore({ kind: "instances", addrs: [server.addr] });
  const keyPrefix = "bench";
  const clock = { now: 1_000_000 };
  const engine = new EngineRuntime({
    store, keyPrefix,
    dispatch: { clusterId: "bench", topicId: "dispatch", partitionCount: 8 },
    authority: new RedisHashAuthority(store, new KeySpace(keyPrefix)),
    projection: { background: false },
    relayIntervalMs: 0,
    conversationList: { now: () => clock.now, compactor: { background: false } },
    unreadAudit: { intervalMs: 0 },
  });
  await engine.start();
  const settle = async () => {
    await engine.relay.drainAll();
    await engine.projection.projector.catchUp();
    await engine.conversationList.compactor.poll();
    clock.now += 60_000;
    await engine.conversationList.compactor.flushIfDue();
  };
  const names = scriptNamesBySha();
  const out: Record<string, unknown> = { mode: MODE, members: MEMBERS, batch: MAX_USERS_PER_MEMBERSHIP_CALL };
  const startMeasuring = async () => {
    await raw.config("SET", "slowlog-log-slower-than", "0");
    await raw.config("SET", "slowlog-max-len", String(MEMBERS * 20 + 10_000));
    await raw.slowlog("RESET");
    await raw.config("RESETSTAT");
  };
  try {
    const tenant = newUuid();
    const owner = newUuid();
    const c = engine.conversations;
    const { group } = await c.createGroup({ tenant, owner, members: [] });
    let joined = 1;
    let joinEventBytes = 0;
    while (joined < MEMBERS) {
      const users: Uuid[] = Array.from({ length: Math.min(MAX_USERS_PER_MEMBERSHIP_CALL, MEMBERS - joined) }, () => newUuid());
      const r = await c.addMembers({ tenant, group, users });
      joined += users.length;
      const k = c.conversationKeys(tenant, group);
      const e = await raw.zrangebyscore(k.hist, r.eventConversationSeq!, r.eventConversationSeq!);
      joinEventBytes = Math.max(joinEventBytes, e[0]?.length ?? 0);
      if (MODE !== "lagging") await settle();
    }
    out.joinEventBytes = joinEventBytes;
    const list = engine.conversationList.compactor;
    const checkpoints = Array.from({ length: engine.dispatchLog.identity.partitionCount }, (_, p) => listCheckpointKey(engine.keys, engine.dispatchLog.identity.topicId, p));
    const stored = await Promise.all(checkpoints.map((key) => raw.get(key)));
    let before = await recomputesByCause();
    if (MODE !== "replay") await startMeasuring();
    let t0 = process.hrtime.bigint();
    await c.send({ tenant, group, sender: owner, text: "hello, everyone" });
    await settle();
    if (MODE === "replay") {
      for (const [i, key] of checkpoints.entries()) {
        if (stored[i] === null) await raw.del(key);
        else await raw.set(key, stored[i]!);
      }
      await list.load();
      before = await recomputesByCause();
      await startMeasuring();
      t0 = process.hrtime.bigint();
      await list.poll();
      await list.flush();
    }
    out.measuredMs = Math.round(Number(process.hrtime.bigint() - t0) / 1e6);
    out.recomputes = diff(await recomputesByCause(), before);
    await raw.config("SET", "slowlog-log-slower-than", "10000");
    const log = (await raw.slowlog("GET", -1)) as [number, number, number, string[]][];
    const perScript: Record<string, { calls: number; totalMs: number; p99Ms: number; maxMs: number }> = {};
    const times = new Map<string, number[]>();
    for (const [, , micros, argv] of log) {
      const cmd = String(argv[0]).toLowerCase();
      const name = cmd === "evalsha" ? (names.get(String(argv[1])) ?? String(argv[1])) : cmd;
      let t = times.get(name);
      if (!t) times.set(name, (t = []));
      t.push(micros / 1000);
    }
    for (const [name, t] of times) {
      t.sort((a, b) => a - b);
      const total = t.reduce((a, b) => a + b, 0);
      perScript[name] = { calls: t.length, totalMs: Math.round(total * 10) / 10, p99Ms: t[Math.floor(t.length * 0.99)]!, maxMs: t[t.length - 1]! };
    }
    out.perScript = perScript;
    const stats = await raw.info("commandstats");
    out.evalshaStats = stats.split("\n").find((l) => l.startsWith("cmdstat_evalsha"))?.trim();
  } finally {
    await engine.stop();
    raw.disconnect();
    await store.close();
    await server.stop();
  }
  if (JSON_OUT) console.log(JSON.stringify(out));
  else for (const [k, v] of Object.entries(out)) console.log(`${k}: ${typeof v === "object" ? JSON.stringify(v) : v}`);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
