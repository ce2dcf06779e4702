/**
 * bench/retention — Redis memory under a steady send load with retention on, printed against the
 * same load with retention off, in the same run (issue 26). Each mode gets its own private
 * redis-server and engine (projection and list consumers off: the relay, the history, the unread
 * index and the idempotency index are what grows); GROUPS groups of 3 members, one sender, sends
 * at a fixed pace for SECONDS seconds. "on": the tenant's default class keeps the last KEEP seqs and
 * the retention task runs every 250 ms. used_memory (INFO memory) is sampled every second; the
 * figure is the growth from the first sample to the last, and on/off is their ratio. Beside it, the
 * MEMORY USAGE of what retention owns (each group's hist, unreadidx, idem), sampled alike.
 * Usage: node dist/bench/retention.js [--json] [--seconds S] [--groups G] [--rate MSGS_PER_S] [--keep N]
 */
import { Redis } from "ioredis";
import { conversationKeys, EngineRuntime, KeySpace, newUuid, RedisHashAuthority, RedisStore, type Uuid } from "../core/index.js";
import { startRedis } from "../test/harness/redis.js";
import { flag } from "./args.js";

const args = process.argv.slice(2);
const JSON_OUT = args.includes("--json");
const SECONDS = flag("--seconds", 20);
const GROUPS = flag("--groups", 20);
const RATE = flag("--rate", 400);
const KEEP = flag("--keep", 50);

async function run(retention: boolean): Promise<{ samples: number[]; history: number[]; sent: number }> {
  const server = await startRedis();
  const raw = new Redis({ host: server.host, port: server.port });
  const store = new RedisStore({ kind: "instances", addrs: [server.addr] });
  const keyPrefix = "bench";
  const rt = new EngineRuntime({
    store, keyPrefix,
    authority: new RedisHashAuthority(store, new KeySpace(keyPrefix)),
    projection: { background: false },
    conversationList: { compactor: { background: false } },
    unreadAudit: { intervalMs: 0 },
    relayIntervalMs: 1000,
    retention: { intervalMs: retention ? 250 : 0 },
  });
  await rt.start();
  try {
    const tenant = newUuid();
    const sender = newUuid();
    const groups: Uuid[] = [];
    for (let i = 0; i < GROUPS; i++) groups.push((await rt.conversations.createGroup({ tenant, owner: sender, members: [newUuid(), newUuid()] })).group);
    if (retention) await rt.retention.policies.setTenantClass(tenant, "standard", { maxAgeMs: 0, maxCount: KEEP }, true);
    const used = async () => Number(/used_memory:(\d+)/.exec(await raw.info("memory"))![1]);
    // what retention owns: MEMORY USAGE of each group's hist, unreadidx and idem (60 keys, one call each)
    const historyBytes = async () => {
      let sum = 0;
      for (const g of groups) {
        const k = conversationKeys(new KeySpace(keyPrefix), tenant, g);
        for (const key of [k.hist, k.unreadidx, k.idem]) sum += Number((await raw.call("MEMORY", "USAGE", key, "SAMPLES", "0")) ?? 0);
      }
      return sum;
    };
    const samples = [await used()];
    const history = [await historyBytes()];
    let sent = 0;
    const started = Date.now();
    for (let s = 1; s <= SECONDS; s++) {
      // RATE sends in this second, spread over the groups, 20 in flight
      const batch: Promise<unknown>[] = [];
      for (let i = 0; i < RATE; i++) {
        batch.push(rt.conversations.send({ tenant, group: groups[(sent + i) % GROUPS]!, sender, text: `message ${sent + i} ${"x".repeat(60)}` }));
        if (batch.length >= 20) await Promise.all(batch.splice(0));
      }
      await Promise.all(batch);
      sent += RATE;
      const wait = started + s * 1000 - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      samples.push(await used());
      history.push(await historyBytes());
    }
    return { samples, history, sent };
  } finally {
    await rt.stop();
    raw.disconnect();
    await store.close();
    await server.stop();
  }
}

async function main() {
  const off = await run(false);
  const on = await run(true);
  const growth = (s: number[]) => s[s.length - 1]! - s[0]!;
  const result = {
    seconds: SECONDS, groups: GROUPS, ratePerSecond: RATE, keep: KEEP,
    off: { sent: off.sent, usedMemoryGrowthBytes: growth(off.samples), samples: off.samples, historyKeysBytes: off.history },
    on: { sent: on.sent, usedMemoryGrowthBytes: growth(on.samples), samples: on.samples, historyKeysBytes: on.history },
    onOverOff: growth(on.samples) / growth(off.samples),
  };
  if (JSON_OUT) { console.log(JSON.stringify(result)); return; }
  const mb = (b: number) => (b / 1048576).toFixed(2);
  console.log(`retention bench: ${GROUPS} groups, ${RATE} sends/s for ${SECONDS}s; on = keep the last ${KEEP} seqs`);
  console.log(`  off: sent ${off.sent}, used_memory growth ${mb(growth(off.samples))} MB; per second (MB): ${off.samples.map(mb).join(" ")}`);
  console.log(`  on:  sent ${on.sent}, used_memory growth ${mb(growth(on.samples))} MB; per second (MB): ${on.samples.map(mb).join(" ")}`);
  console.log(`  history keys (hist + unreadidx + idem of the groups, MB) off: ${off.history.map(mb).join(" ")}`);
  console.log(`  history keys (hist + unreadidx + idem of the groups, MB) on:  ${on.history.map(mb).join(" ")}`);
  console.log("  (the rest of the growth with retention on is the dispatch log, kept for dispatch.retention, 1 day by default)");
  console.log(`  growth on/off: ${result.onOverOff.toFixed(3)}`);
}

main().then(() => process.exit(0), (err) => { console.error(err); process.exit(1); });
