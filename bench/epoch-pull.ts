/**
 * bench/epoch-pull — the session list pull with and without the projection epoch cache (issue 26,
 * the hot key), from one run on one private redis-server. Users with 20 conversations each are
 * pulled (UserSessionProjection.listSessions, a 20-row page) at 64 in flight:
 *   uncached  the epoch read from {g000} on every pull, as before (current() is get()) — the baseline
 *   cached    ProjectionEpoch.current() as the engine runs it (the real clock)
 * Printed: pulls/s of each, their ratio, and the GETs Redis counted per pull (INFO commandstats).
 * Rounds alternate; medians. Usage: node dist/bench/epoch-pull.js [--pulls N] [--rounds R] [--users U]
 */
import {
  ConversationService, newUuid, ProjectionEpoch, RedisHashAuthority, RedisStore, UserSessionProjection, userKeys, uuidToHex, type Uuid,
} from "../core/index.js";
import { startRedis } from "../test/harness/redis.js";
import { flag } from "./args.js";

const PULLS = flag("--pulls", 20000);
const ROUNDS = flag("--rounds", 3);
const CONCURRENCY = 64;
const USERS = flag("--users", 200);
const CONVERSATIONS = 20;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  const server = await startRedis();
  const store = new RedisStore({ kind: "instances", addrs: [server.addr] });
  try {
    const engine = new ConversationService(store, { keyPrefix: "benchepoch" });
    const authority = new RedisHashAuthority(store, engine.keys);
    const tenant = newUuid();
    const users: Uuid[] = Array.from({ length: USERS }, () => newUuid());
    // each user in CONVERSATIONS groups with one message, projected by hand (convs ZSET)
    for (const user of users) {
      const k = userKeys(engine.keys, tenant, user);
      for (let c = 0; c < CONVERSATIONS; c++) {
        const { group } = await engine.createGroup({ tenant, owner: user });
        await engine.send({ tenant, group, sender: user, text: "x" });
        await store.clientFor(k.tag).zadd(k.convs, Date.now(), uuidToHex(group));
      }
    }
    // the code before the cache: every pull reads Redis
    class EveryPull extends ProjectionEpoch {
      override current(): Promise<number> { return this.get(); }
    }
    const uncached = new UserSessionProjection(store, engine.keys, engine, authority, new EveryPull(store, engine.keys));
    const cached = new UserSessionProjection(store, engine.keys, engine, authority, new ProjectionEpoch(store, engine.keys));
    const gets = async () => Number(/^cmdstat_get:calls=(\d+)/m.exec(await server.command(["INFO", "commandstats"]))?.[1] ?? 0);
    const run = async (sessions: UserSessionProjection) => {
      let next = 0;
      const g0 = await gets();
      const t0 = process.hrtime.bigint();
      await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
        for (;;) {
          const i = next++;
          if (i >= PULLS) return;
          await sessions.listSessions({ tenant, user: users[i % USERS]!, limit: CONVERSATIONS });
        }
      }));
      const rate = PULLS / (Number(process.hrtime.bigint() - t0) / 1e9);
      return { rate, getsPerPull: ((await gets()) - g0) / PULLS };
    };
    await run(uncached);
    await run(cached);
    const u: { rate: number; getsPerPull: number }[] = [];
    const c: { rate: number; getsPerPull: number }[] = [];
    for (let r = 0; r < ROUNDS; r++) {
      u.push(await run(uncached));
      c.push(await run(cached));
    }
    const ur = median(u.map((x) => x.rate));
    const cr = median(c.map((x) => x.rate));
    console.log(`list pull (${CONVERSATIONS}-row page, ${CONCURRENCY} in flight, ${PULLS} pulls × ${ROUNDS} rounds, medians): `
      + `cached epoch ${Math.round(cr)} pulls/s vs uncached ${Math.round(ur)} pulls/s = ratio ${(cr / ur).toFixed(3)}; `
      + `GETs per pull ${median(c.map((x) => x.getsPerPull)).toFixed(4)} vs ${median(u.map((x) => x.getsPerPull)).toFixed(4)}`);
  } finally {
    await store.close();
    await server.stop();
  }
}

main().catch((err) => { console.error(err); process.exit(1); });
