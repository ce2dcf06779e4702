/**
 * bench/large-group — issue 22: one message to a very large group, from one run on one private
 * redis-server through the real engine (EngineRuntime in this process, as the server builds it:
 * commit path, outbox relay, dispatch log, session projection, conversation list), every figure
 * next to a baseline measured in the same run:
 *   1. fanout of ONE message to a group of --members (default 1,000,000), recipients/s, from the
 *      send until every recipient's session projection `convs` has it (a spread sample of ~1,000
 *      polled, then a total count read in pipelines of 1,000 ZSCOREs) and a sample of 200 users'
 *      served lists (SessionView pages) have it as head; then, with the probe stopped, how long the
 *      rest of the pipeline (registrations, the durable consumers) takes to be idle.
 *      Baseline: a raw pipelined write of the same recipients in the same run — one
 *      `ZADD convs created_at conversation` per recipient into the same kind of key (another key
 *      prefix), 1,000 commands a pipeline, 4 pipelines in flight → ratio fanout / baseline.
 *   2. the longest Redis commands during the fanout and its catch-up: SLOWLOG (slowlog-log-slower-than 10 ms) top
 *      entries, and LATENCY LATEST (latency-monitor-threshold 10 ms).
 *   3. small-group send p99 (groups of 20, one send in flight on each of 16, 100 ms of pause after
 *      each ack, commit to ack through ConversationService.send in this process) and PING p99 (own
 *      connection, every 10 ms) on the same Redis, WITHOUT the big fanout (a quiet window of
 *      --quiet-ms before it) and WITH it.
 *
 * Seeding (timed apart, not measured): the group is created with the engine (createGroup), then
 * its member table is WRITTEN DIRECTLY in the layout createGroup-2.lua writes for initial members
 * (grpmembers: user hex → "0||A", i.e. joined_at 0, no left_at, ACTIVE; grpmeta member_count, member
 * version 1): the real add path (1,000 calls of 1,000 users, one join event each, member versions
 * serialised) takes ~8.5 min for 1,000,000 (issue 22), and one createGroup of a million initial
 * members is one script holding Redis for seconds. `--seed engine` uses the real add path instead
 * (addMembers in calls of 1,000, one after another: each call plans at the member version the
 * last one made) and waits for its join events to settle before the measured part.
 *
 * A fanout that is not done after --guard-s (default 900 s) is reported as such, with how far it
 * got; the bench then stops (on today's main a million-member fanout holds Redis in one script).
 * Usage: node dist/bench/large-group.js [--members N] [--rounds R] [--quiet-ms MS] [--guard-s S]
 *          [--seed direct|engine] [--json]
 */
import os from "node:os";
import { Redis } from "ioredis";
import {
  checkpointKey, COMMIT_BUCKET_COUNT, decodeHistoryEntry, EngineRuntime, KeySpace, listCheckpointKey, newUuid, outboxKey, RedisHashAuthority, RedisStore,
  conversationKeys, ucsPendingKey, userKeys, uuidToHex, type Uuid,
} from "../core/index.js";
import { startRedis } from "../test/harness/redis.js";
import { flag } from "./args.js";
import { scriptNamesBySha } from "./redis-stats.js";

const args = process.argv.slice(2);
const JSON_ONLY = args.includes("--json");
/** Issue 22: a million members must work (the stated maximum group size is at least that). */
const MEMBERS = flag("--members", 1_000_000);
const ROUNDS = flag("--rounds", 2);
const QUIET_MS = flag("--quiet-ms", 5000);
const GUARD_MS = flag("--guard-s", 900) * 1000;
const SEED = (() => {
  const i = args.indexOf("--seed");
  return i >= 0 ? args[i + 1] : "direct";
})();
if (!Number.isInteger(MEMBERS) || MEMBERS < 2) throw new Error(`--members must be an integer ≥ 2, got ${MEMBERS}`);
if (SEED !== "direct" && SEED !== "engine") throw new Error(`--seed must be direct or engine, got ${SEED}`);
/** Users per add call: the engine's limit per membership call. */
const PER_CALL = 1000;
/** Commands per pipeline (seeding, the baseline, the count) and pipelines in flight (the baseline). */
const PIPELINE = 1000;
const PIPELINES_IN_FLIGHT = 4;
/**
 * The probe: 16 groups of 20, one send in flight on each, each sending again PROBE_PAUSE_MS after
 * its ack (as the acceptance test's probe); a PING every 10 ms. A probe of latency, not a load: sent
 * back to back, the 16 senders wrote ~1,400 messages/s, and at a million members the conversation
 * list's consumer was still working through 1.2 million probe records (it applies the log in
 * order) 25 minutes later, the big message's rows behind them.
 */
const SMALL_GROUPS = 16;
const SMALL_GROUP_SIZE = 20;
const PROBE_PAUSE_MS = 100;
const PING_EVERY_MS = 10;
/** SLOWLOG / LATENCY thresholds during the fanout. */
const SLOW_MS = 10;
/** Served lists read after each fanout (and the recipients whose `convs` is sampled while it runs). */
const SAMPLE = 200;
const PARTITIONS = 8;

/** Our scripts by SHA1, so that a SLOWLOG entry names the script instead of its EVALSHA digest. */
const SCRIPTS = scriptNamesBySha();
const commandName = (cmd: string[]) => (cmd[0]?.toLowerCase() === "evalsha" ? `EVALSHA ${SCRIPTS.get(cmd[1]!) ?? cmd[1]}` : cmd.slice(0, 2).join(" ").slice(0, 100));
const say = (line: string) => { if (!JSON_ONLY) console.log(line); };
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const pct = (xs: number[], p: number) => (xs.length === 0 ? NaN : [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!);
const r2 = (x: number) => +x.toFixed(2);
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

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

const redis = await startRedis();
const store = new RedisStore({ kind: "instances", addrs: [redis.addr] });
const raw = new Redis({ host: redis.host, port: redis.port });
const keyPrefix = "lg";
const keys = new KeySpace(keyPrefix);
const engine = new EngineRuntime({
  store, keyPrefix, dispatch: { clusterId: "bench", topicId: "dispatch", partitionCount: PARTITIONS },
  authority: new RedisHashAuthority(store, keys),
  log: (line) => { if (!JSON_ONLY) console.error(`  engine: ${line}`); },
});
const out: Record<string, unknown> = {
  redis: (await raw.info("server")).match(/redis_version:(\S+)/)?.[1], members: MEMBERS, rounds: ROUNDS, seed: SEED, loadAvgAtStart: os.loadavg().map(r2),
};

/** Records of a partition after a checkpoint "offset|streamId" (the offset of the next record to read). */
const lagOf = (high: number, pos: string | null) => (pos === null ? high : high - Number(pos.slice(0, pos.indexOf("|"))));

/** Null when nothing is left to do, else what is left. Bounded reads only. */
async function busy(): Promise<string | null> {
  const lengths = await store.listLengths([
    ...Array.from({ length: COMMIT_BUCKET_COUNT }, (_, b) => outboxKey(keys, b)),
    ...Array.from({ length: COMMIT_BUCKET_COUNT }, (_, b) => ucsPendingKey(keys, b)),
  ]);
  const outbox = lengths.slice(0, COMMIT_BUCKET_COUNT).reduce((a, n) => a + n, 0);
  const pending = lengths.slice(COMMIT_BUCKET_COUNT).reduce((a, n) => a + n, 0);
  let projectionLag = 0;
  let listLag = 0;
  for (let p = 0; p < PARTITIONS; p++) {
    const { high } = await engine.dispatchLog.watermarks(p);
    // the projection's checkpoint is a hash (pos), the list's a string
    projectionLag += lagOf(high, await raw.hget(checkpointKey(keys, "dispatch", p), "pos"));
    listLag += lagOf(high, await raw.get(listCheckpointKey(keys, "dispatch", p)));
  }
  return outbox === 0 && pending === 0 && projectionLag === 0 && listLag === 0 ? null
    : `outbox ${outbox}, pending registrations ${pending}, records behind: session projection ${projectionLag}, conversation list ${listLag}`;
}

/** Polls busy() until idle; the time it became idle, or null after the guard (with what was left). */
async function untilIdle(guardMs: number): Promise<{ ms: number | null; left: string | null }> {
  const t0 = Date.now();
  let left: string | null = null;
  while (Date.now() - t0 < guardMs) {
    left = await busy().catch((err: unknown) => `busy() failed: ${String(err)}`);
    if (left === null) return { ms: Date.now() - t0, left };
    await sleep(100);
  }
  return { ms: null, left };
}

/** How many of `users` have `groupHex` in their convs at `score` or later: pipelines of ZSCORE. */
async function countHaving(tenant: Uuid, users: Uuid[], groupHex: string, prefix: KeySpace, score: number): Promise<number> {
  let n = 0;
  for (let i = 0; i < users.length; i += PIPELINE) {
    const pl = raw.pipeline();
    for (const u of users.slice(i, i + PIPELINE)) pl.zscore(userKeys(prefix, tenant, u).convs, groupHex);
    for (const [err, s] of (await pl.exec()) ?? []) if (!err && s !== null && Number(s) >= score) n++;
  }
  return n;
}

/** Small-group sends and PINGs until stopped. */
function probe(tenant: Uuid, small: { group: Uuid; owner: Uuid }[]) {
  let stopped = false;
  const sends: number[] = [];
  const pings: number[] = [];
  let failures = 0;
  const senders = small.map(async (g, w) => {
    for (let i = 0; !stopped; i++) {
      const t0 = performance.now();
      try {
        await engine.conversations.send({ tenant, group: g.group, sender: g.owner, text: `probe ${w}.${i}` });
        sends.push(performance.now() - t0);
      } catch {
        failures++;
      }
      await sleep(PROBE_PAUSE_MS);
    }
  });
  const ping = new Redis({ host: redis.host, port: redis.port });
  const pinger = (async () => {
    while (!stopped) {
      const t0 = performance.now();
      await ping.ping();
      pings.push(performance.now() - t0);
      await sleep(PING_EVERY_MS);
    }
  })();
  return async () => {
    stopped = true;
    await Promise.all([...senders, pinger]);
    ping.disconnect();
    return { sends: sends.length, sendP50Ms: r2(pct(sends, 0.5)), sendP99Ms: r2(pct(sends, 0.99)), sendMaxMs: r2(sends.reduce((a, b) => Math.max(a, b), 0)), sendFailures: failures,
      pings: pings.length, pingP99Ms: r2(pct(pings, 0.99)), pingMaxMs: r2(pings.reduce((a, b) => Math.max(a, b), 0)) };
  };
}

try {
  await engine.start();
  const c = engine.conversations;
  const tenant = newUuid();
  const owner = newUuid();
  const members: Uuid[] = [owner];

  // ---- seeding (not measured)
  const ts = Date.now();
  const { group } = await c.createGroup({ tenant, owner, members: [] });
  const ck = conversationKeys(keys, tenant, group);
  if (SEED === "direct") {
    for (let i = 1; i < MEMBERS; i += PIPELINE) {
      const pl = raw.pipeline();
      const fields: string[] = [];
      for (let j = i; j < Math.min(MEMBERS, i + PIPELINE); j++) {
        const u = newUuid();
        members.push(u);
        fields.push(uuidToHex(u), "0||A");
      }
      pl.hset(ck.grpmembers, ...fields);
      await pl.exec();
    }
    await raw.hset(ck.grpmeta, "member_count", members.length);
  } else {
    for (let i = 1; i < MEMBERS; i += PER_CALL) {
      const batch = Array.from({ length: Math.min(PER_CALL, MEMBERS - i) }, () => newUuid());
      await c.addMembers({ tenant, group, users: batch });
      members.push(...batch);
    }
  }
  const small: { group: Uuid; owner: Uuid }[] = [];
  for (let g = 0; g < SMALL_GROUPS; g++) {
    const o = newUuid();
    small.push({ group: (await c.createGroup({ tenant, owner: o, members: Array.from({ length: SMALL_GROUP_SIZE - 1 }, () => newUuid()) })).group, owner: o });
  }
  const seeded = await untilIdle(GUARD_MS);
  if (seeded.ms === null) throw new Error(`seeding did not settle within the guard: ${seeded.left}`);
  const info = await c.getGroup(tenant, group);
  if (info.memberCount !== MEMBERS) throw new Error(`the group has ${info.memberCount} members, not ${MEMBERS}`);
  out.seedMs = Date.now() - ts;
  say(`redis ${String(out.redis)}; a ${MEMBERS.toLocaleString("en")}-member group seeded (${SEED}) in ${((Date.now() - ts) / 1000).toFixed(1)} s; ${SMALL_GROUPS} groups of ${SMALL_GROUP_SIZE} for the probe`);

  const groupHex = uuidToHex(group);
  const baseKeys = new KeySpace("lgbase");
  const sampleUsers = Array.from({ length: SAMPLE }, (_, i) => members[Math.floor(((i + 0.5) * members.length) / SAMPLE)]!);
  /** ~1,000 recipients spread over the group: polled while the fanout runs, before each total count. */
  const spread = members.filter((_, i) => i % Math.max(1, Math.floor(members.length / 1000)) === 0);
  const rounds: Record<string, unknown>[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    // without the fanout
    const stopQuiet = probe(tenant, small);
    await sleep(QUIET_MS);
    const quiet = await stopQuiet();
    await untilIdle(GUARD_MS);

    // baseline: the same recipients, one pipelined ZADD each
    const createdAt = Date.now();
    const tb = process.hrtime.bigint();
    let nextBatch = 0;
    await pool(Math.ceil(members.length / PIPELINE), PIPELINES_IN_FLIGHT, async () => {
      const i = nextBatch++ * PIPELINE;
      const pl = raw.pipeline();
      for (const u of members.slice(i, i + PIPELINE)) pl.zadd(userKeys(baseKeys, tenant, u).convs, "GT", createdAt, groupHex);
      await pl.exec();
    });
    const baseSec = Number(process.hrtime.bigint() - tb) / 1e9;
    const baseCount = await countHaving(tenant, members, groupHex, baseKeys, createdAt);
    if (baseCount !== members.length) throw new Error(`the baseline wrote ${baseCount} of ${members.length} entries`);

    // the fanout
    await raw.config("SET", "slowlog-log-slower-than", String(SLOW_MS * 1000));
    await raw.config("SET", "slowlog-max-len", "1024");
    await raw.slowlog("RESET");
    await raw.config("SET", "latency-monitor-threshold", String(SLOW_MS));
    await raw.call("LATENCY", "RESET");
    const stopBusy = probe(tenant, small);
    const tf = Date.now();
    const sent = await c.send({ tenant, group, sender: owner, text: `to all ${MEMBERS} (round ${round})` });
    const sendAckMs = Date.now() - tf;
    // done when every recipient's `convs` has the message (the spread sample first, then the total
    // count) and the sampled users' served lists have it as head: the probe keeps the engine
    // busy, so "nothing left to do" is no signal while it runs
    const hist = (await raw.zrangebyscore(ck.hist, sent.conversationSeq, sent.conversationSeq))[0] ?? "";
    const msgAt = decodeHistoryEntry(hist).createdAt;
    const listHas = async () => {
      let n = 0;
      for (const u of sampleUsers) {
        const page = await engine.sessionView.page(tenant, u, { limit: 50 });
        if (page.rows.some((r) => r.conversation === group && r.lastActivitySeq === sent.conversationSeq)) n++;
      }
      return n;
    };
    let have = 0;
    let listOk = 0;
    let convsMs: number | null = null;
    let fanoutMs: number | null = null;
    while (Date.now() - tf < GUARD_MS) {
      if (convsMs === null && (await countHaving(tenant, spread, groupHex, keys, msgAt)) === spread.length) {
        have = await countHaving(tenant, members, groupHex, keys, msgAt);
        if (have === members.length) convsMs = Date.now() - tf;
      }
      if (convsMs !== null && (listOk = await listHas()) === SAMPLE) {
        fanoutMs = Date.now() - tf;
        break;
      }
      await sleep(100);
    }
    if (convsMs === null) have = await countHaving(tenant, members, groupHex, keys, msgAt);
    const during = await stopBusy();
    // the rest (registrations, the durable consumers) after the probe stopped; SLOWLOG covers it
    const rest = await untilIdle(GUARD_MS);
    const slowlog = ((await raw.slowlog("GET", "1024")) as [number, number, number, string[]][])
      .sort((a, b) => b[2] - a[2]).slice(0, 5).map(([, , us, cmd]) => ({ ms: r2(us / 1000), command: commandName(cmd) }));
    const slowCount = Number(await raw.slowlog("LEN"));
    const latency = ((await raw.call("LATENCY", "LATEST")) as [string, number, number, number][]).map(([event, , , max]) => ({ event, maxMs: max }));

    const fanoutRate = fanoutMs === null ? null : Math.round(members.length / (fanoutMs / 1000));
    const baseRate = Math.round(members.length / baseSec);
    const row = {
      round, recipients: members.length, sendAckMs, convsMs, fanoutMs, completed: fanoutMs !== null, restIdleAfterProbeMs: rest.ms, leftAtGuard: rest.left,
      fanoutRecipientsPerSec: fanoutRate, baselineRecipientsPerSec: baseRate, ratio: fanoutRate === null ? null : +(fanoutRate / baseRate).toFixed(4),
      convsHaveMessage: have, listSampleHasHead: `${listOk}/${SAMPLE}`,
      slowlogOver10ms: slowCount, slowlogTop: slowlog, latencyLatest: latency, withoutFanout: quiet, withFanout: during,
    };
    rounds.push(row);
    say(`\nround ${round}: send acked in ${sendAckMs} ms; fanout ${fanoutMs === null ? `NOT DONE after the ${GUARD_MS / 1000} s guard` : `done in ${(fanoutMs / 1000).toFixed(1)} s (every convs after ${((convsMs ?? 0) / 1000).toFixed(1)} s)`}`
      + ` = ${fanoutRate ?? "-"} recipients/s vs baseline ${baseRate} recipients/s (pipelined ZADD, ${baseSec.toFixed(1)} s) → ratio ${row.ratio ?? "-"}`);
    say(`   convs with the message: ${have}/${members.length}; served list with it as head: ${row.listSampleHasHead} sampled users; `
      + `${rest.ms === null ? `still busy ${GUARD_MS / 1000} s after the probe stopped: ${rest.left}` : `idle ${(rest.ms / 1000).toFixed(1)} s after the probe stopped`}`);
    say(`   longest Redis commands (SLOWLOG > ${SLOW_MS} ms: ${slowCount}): ${slowlog.map((s) => `${s.ms} ms ${s.command}`).join("; ") || "none"}`);
    say(`   LATENCY LATEST: ${latency.map((l) => `${l.event} max ${l.maxMs} ms`).join("; ") || "nothing over the threshold"}`);
    say(`   small-group send p99 without / with the fanout: ${quiet.sendP99Ms} / ${during.sendP99Ms} ms (p50 ${quiet.sendP50Ms} / ${during.sendP50Ms}, max ${quiet.sendMaxMs} / ${during.sendMaxMs}, ${quiet.sends} / ${during.sends} sends, ${during.sendFailures} failed)`);
    say(`   PING p99 without / with: ${quiet.pingP99Ms} / ${during.pingP99Ms} ms (max ${quiet.pingMaxMs} / ${during.pingMaxMs})`);
    if (fanoutMs === null) break;
  }
  out.rounds = rounds;
  const doneRounds = rounds.filter((r) => r.completed) as { ratio: number; fanoutRecipientsPerSec: number; baselineRecipientsPerSec: number }[];
  if (doneRounds.length > 0) {
    out.median = {
      fanoutRecipientsPerSec: median(doneRounds.map((r) => r.fanoutRecipientsPerSec)),
      baselineRecipientsPerSec: median(doneRounds.map((r) => r.baselineRecipientsPerSec)),
      ratio: median(doneRounds.map((r) => r.ratio)),
    };
    say(`\nmedian of ${doneRounds.length} round(s): fanout ${JSON.stringify(out.median)}`);
  }
} finally {
  out.loadAvgAtEnd = os.loadavg().map(r2);
  say(`load average at start ${(out.loadAvgAtStart as number[]).join(" ")}, at end ${(out.loadAvgAtEnd as number[]).join(" ")} (2 cores)`);
  console.log(JSON.stringify(out));
  await engine.stop();
  raw.disconnect();
  await store.close();
  await redis.stop();
}
