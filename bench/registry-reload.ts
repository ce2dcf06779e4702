/**
 * bench/registry-reload (issue 29): how long after a registry change commits every other node
 * applies it. Two registries, each on its own Redis connection (what a node has; their only shared
 * state is Redis, as between two node processes), on one private redis-server: A applies changes,
 * B answers what a send on it would use, asked every --poll ms (a node busy with sends). For each
 * change: the time from A's apply returning to B's first answer with the new version. The bound
 * stated in the operator guide is registry_reload_interval (REGISTRY_RELOAD_INTERVAL_MS) plus one
 * read; --changes changes at random phases of the interval.
 * Usage: node dist/bench/registry-reload.js [--changes N] [--poll MS] [--json]
 */
import { KeySpace, MessageTypeRegistry, newUuid, parseDeclaration, RedisStore, REGISTRY_RELOAD_INTERVAL_MS } from "../core/index.js";
import { startRedis } from "../test/harness/redis.js";
import { flag } from "./args.js";

const CHANGES = flag("--changes", 20);
const POLL_MS = flag("--poll", 5);
const JSON_OUT = process.argv.includes("--json");
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const server = await startRedis();
  const storeA = new RedisStore({ kind: "instances", addrs: [server.addr] });
  const storeB = new RedisStore({ kind: "instances", addrs: [server.addr] });
  const keys = new KeySpace("bench");
  const a = new MessageTypeRegistry(storeA, keys);
  const b = new MessageTypeRegistry(storeB, keys);
  const tenant = newUuid();
  const delays: number[] = [];
  let reads = 0;
  try {
    await a.apply({ tenant, put: [parseDeclaration({ custom_type: "bench.reload", schema_version: 1 }, "bench")], delete: [] });
    await b.current(tenant);
    for (let i = 2; i < CHANGES + 2; i++) {
      await sleep(Math.random() * REGISTRY_RELOAD_INTERVAL_MS);
      const r = await a.apply({ tenant, put: [parseDeclaration({ custom_type: "bench.reload", schema_version: i }, "bench")], delete: [] });
      const committed = performance.now();
      for (;;) {
        const s = await b.current(tenant);
        reads++;
        if (s.version >= r.version) {
          if (s.types.get("bench.reload")!.schemaVersion !== i) throw new Error(`version ${s.version} holds schema ${s.types.get("bench.reload")!.schemaVersion}, not ${i}`);
          delays.push(performance.now() - committed);
          break;
        }
        await sleep(POLL_MS);
      }
    }
  } finally {
    await storeA.close();
    await storeB.close();
    await server.stop();
  }
  const sorted = [...delays].sort((x, y) => x - y);
  const out = {
    changes: CHANGES, pollMs: POLL_MS, intervalMs: REGISTRY_RELOAD_INTERVAL_MS,
    p50Ms: +sorted[Math.floor(sorted.length / 2)]!.toFixed(1), maxMs: +sorted[sorted.length - 1]!.toFixed(1), minMs: +sorted[0]!.toFixed(1),
    withinBound: sorted[sorted.length - 1]! <= REGISTRY_RELOAD_INTERVAL_MS + POLL_MS + 50, asks: reads,
  };
  if (JSON_OUT) console.log(JSON.stringify(out, null, 2));
  else console.log(`registry change -> in force on another node: p50 ${out.p50Ms} ms, max ${out.maxMs} ms, min ${out.minMs} ms over ${CHANGES} changes (reload interval ${out.intervalMs} ms, asked every ${POLL_MS} ms); within interval + one read + poll: ${out.withinBound}`);
  if (!out.withinBound) process.exitCode = 1;
}

main().catch((err) => { console.error(err); process.exit(1); });
