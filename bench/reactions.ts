/**
 * bench/reactions (issue 28): what one reaction costs, in the C-1 shape (spec 003 §6: a group of
 * --members members, one message, --reactors users reacting once each, --concurrency at a time),
 * against a raw HINCRBY of the same keys (the summary's hash key, one field per reaction key) on the
 * same Redis, same client, same concurrency, in the same run. Each round is one storm of each on a
 * fresh message, alternating. Reported per op: wall time, and Redis's own CPU (INFO commandstats
 * usec_per_call of the script and of HINCRBY). The executor's one script does what the raw command
 * cannot: who may react, idempotency, the detail limits, the versioned absolute summary.
 * Usage: node dist/bench/reactions.js [--members 100000] [--reactors 5000] [--concurrency 16] [--rounds 3] [--json]
 */
import { ConversationService, conversationKeys, KeySpace, newUuid, Reactions, RedisStore, type Uuid } from "../core/index.js";
import { eachLimited } from "../core/support/index.js";
import { startRedis } from "../test/harness/redis.js";
import { flag } from "./args.js";

const MEMBERS = flag("--members", 100_000);
const REACTORS = flag("--reactors", 5000);
const CONCURRENCY = flag("--concurrency", 16);
const ROUNDS = flag("--rounds", 3);
const JSON_OUT = process.argv.includes("--json");
const KEYS = ["👍", "❤️", "party"];
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function commandUsec(store: RedisStore, tag: string): Promise<Map<string, { calls: number; usec: number }>> {
  const info = await store.clientFor(tag).info("commandstats");
  const out = new Map<string, { calls: number; usec: number }>();
  for (const m of info.matchAll(/cmdstat_([a-z|]+):calls=(\d+),usec=(\d+)/g)) out.set(m[1]!, { calls: Number(m[2]), usec: Number(m[3]) });
  return out;
}

async function main() {
  if (REACTORS >= MEMBERS) throw new Error("--reactors must be fewer than --members");
  const server = await startRedis();
  const store = new RedisStore({ kind: "instances", addrs: [server.addr] });
  const keys = new KeySpace("bench");
  const conversations = new ConversationService(store, { keyPrefix: keys.prefix });
  const reactions = new Reactions(store, keys);
  const tenant = newUuid();
  const owner = newUuid();
  const rounds: { reactUs: number; hincrbyUs: number; reactRedisUs: number; hincrbyRedisUs: number }[] = [];
  try {
    const g = await conversations.createGroup({ tenant, owner, members: [] });
    const group = g.group as Uuid;
    const members: Uuid[] = [];
    while (members.length < MEMBERS - 1) {
      const batch = Array.from({ length: Math.min(1000, MEMBERS - 1 - members.length) }, () => newUuid());
      await conversations.addMembers({ tenant, group, users: batch });
      members.push(...batch);
    }
    const k = conversationKeys(keys, tenant, group);
    for (let round = 0; round < ROUNDS; round++) {
      const sent = await conversations.send({ tenant, group, sender: owner, text: `round ${round}` });
      const reactors = members.slice(round * 7 % (members.length - REACTORS)).slice(0, REACTORS).map((user, i) => ({ user, key: KEYS[i % KEYS.length]! }));
      const before = await commandUsec(store, k.tag);
      let t0 = performance.now();
      await eachLimited(reactors, CONCURRENCY, async (r) => {
        const res = await reactions.react({ tenant, group, seq: sent.conversationSeq, user: r.user, key: r.key });
        if (!res.changed) throw new Error("a reaction changed nothing");
      });
      const reactUs = ((performance.now() - t0) * 1000) / REACTORS;
      const mid = await commandUsec(store, k.tag);
      const client = store.clientFor(k.tag);
      const raw = `${k.rxsum}:raw:${round}`;
      t0 = performance.now();
      await eachLimited(reactors, CONCURRENCY, async (r) => {
        await client.hincrby(raw, r.key, 1);
      });
      const hincrbyUs = ((performance.now() - t0) * 1000) / REACTORS;
      const after = await commandUsec(store, k.tag);
      const delta = (a: Map<string, { calls: number; usec: number }>, b: Map<string, { calls: number; usec: number }>, cmd: string) =>
        ((b.get(cmd)?.usec ?? 0) - (a.get(cmd)?.usec ?? 0)) / Math.max(1, (b.get(cmd)?.calls ?? 0) - (a.get(cmd)?.calls ?? 0));
      rounds.push({ reactUs, hincrbyUs, reactRedisUs: delta(before, mid, "evalsha"), hincrbyRedisUs: delta(mid, after, "hincrby") });
      const s = await reactions.summary(tenant, group, sent.conversationSeq);
      if (s?.version !== REACTORS) throw new Error(`summary version ${s?.version}, not ${REACTORS}`);
    }
  } finally {
    await store.close();
    await server.stop();
  }
  const out = {
    members: MEMBERS, reactors: REACTORS, concurrency: CONCURRENCY, rounds,
    reactUsPerOp: +median(rounds.map((r) => r.reactUs)).toFixed(1), hincrbyUsPerOp: +median(rounds.map((r) => r.hincrbyUs)).toFixed(1),
    wallRatio: +median(rounds.map((r) => r.reactUs / r.hincrbyUs)).toFixed(2),
    redisUsPerReaction: +median(rounds.map((r) => r.reactRedisUs)).toFixed(1), redisUsPerHincrby: +median(rounds.map((r) => r.hincrbyRedisUs)).toFixed(1),
    redisRatio: +median(rounds.map((r) => r.reactRedisUs / r.hincrbyRedisUs)).toFixed(1),
  };
  if (JSON_OUT) console.log(JSON.stringify(out, null, 2));
  else {
    console.log(`reaction storm (C-1 shape: ${MEMBERS} members, ${REACTORS} reactions, ${CONCURRENCY} at a time), median of ${ROUNDS} rounds:`);
    console.log(`  wall per op: react ${out.reactUsPerOp} µs vs raw HINCRBY ${out.hincrbyUsPerOp} µs = ${out.wallRatio}×`);
    console.log(`  Redis CPU per op: react script ${out.redisUsPerReaction} µs vs HINCRBY ${out.redisUsPerHincrby} µs = ${out.redisRatio}×`);
  }
}

main().catch((err) => { console.error(err); process.exit(1); });
