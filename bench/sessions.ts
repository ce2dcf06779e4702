/**
 * bench/sessions — the conversation list as served, from one run on one private redis-server
 * through the real engine (commit path, dispatch log, session projection, conversation-list
 * consumer), every figure next to a baseline measured in the same run:
 *   1. A 50-row page of a user with 5,000 conversations:
 *        today      UserSessionProjection.listSessions (phase 1): ZREVRANGE convs 0 49 + one pipelined
 *                   read per row (head + definitional unread) — the baseline
 *        snapshot   SessionView.page: the warm in-memory snapshot, first page and a page deep in
 *                   the list (cursor at row 2,500)
 *        served     what ListConversations does: snapshot page + one pipelined read of the page's
 *                   heads (conversationSummaries)
 *        cold       the first page of a user whose snapshot is not held (5,000 rows read and sorted)
 *   2. Unread maintenance per delivered entry: a G-member group, M messages at 20 msg/s on an
 *      injected clock (compaction window 5 s); per delivery round the session projection's
 *      registration write (projector.catchUp, today's write per entry: the baseline) and the
 *      conversation-list consumer (compactor.poll + flushIfDue) are timed apart on the same records.
 *   3. J-1's count on that run: persistent row writes per member per conversation
 *      (qim_conversation_list_row_writes_total) against ceil(span / window) + 1.
 * Rounds alternate the paths; medians are printed. Wall-clock figures move between machines;
 * the ratios of one run do not.
 * Usage: node dist/bench/sessions.js [--rounds R] [--pages N] [--members G] [--messages M] [--json]
 */
import {
  EngineRuntime, KeySpace, newUuid, RedisHashAuthority, RedisStore, registry, type Uuid,
} from "../core/index.js";
import { startRedis } from "../test/harness/redis.js";
import { flag } from "./args.js";

const args = process.argv.slice(2);
const JSON_ONLY = args.includes("--json");
const ROUNDS = flag("--rounds", 5);
const PAGES = flag("--pages", 200);
const CONVERSATIONS = 5000;
const MEMBERS = flag("--members", 100);
const MESSAGES = flag("--messages", 200);
const MSG_INTERVAL_MS = 50; // 20 msg/s (J-1)
const WINDOW_MS = 5000; // projection_compaction_window
const say = (line: string) => { if (!JSON_ONLY) console.log(line); };
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const r2 = (x: number) => +x.toFixed(2);
const r4 = (x: number) => +x.toFixed(4);

async function inBatches(n: number, size: number, fn: (i: number) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < n; i += size) await Promise.all(Array.from({ length: Math.min(size, n - i) }, (_, k) => fn(i + k)));
}

/** µs per call of `op`, `n` calls one after another. */
async function timeEach(n: number, op: (i: number) => Promise<unknown>): Promise<number> {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) await op(i);
  return Number(process.hrtime.bigint() - t0) / 1000 / n;
}

async function rowWrites(): Promise<number> {
  const m = registry.getSingleMetric("qim_conversation_list_row_writes_total");
  return m ? (await m.get()).values.reduce((s, v) => s + v.value, 0) : 0;
}

const redis = await startRedis();
const store = new RedisStore({ kind: "instances", addrs: [redis.addr] });
const keyPrefix = `bs${newUuid().slice(0, 6)}`;
const clock = { now: 1_000_000 };
const engine = new EngineRuntime({
  store, keyPrefix, dispatch: { clusterId: "bench", topicId: "dispatch", partitionCount: 4 },
  authority: new RedisHashAuthority(store, new KeySpace(keyPrefix)),
  projection: { background: false }, relayIntervalMs: 0,
  conversationList: { now: () => clock.now, compactor: { background: false } },
});
try {
  await engine.start();
  const c = engine.conversations;
  const list = engine.conversationList;
  const settle = async () => {
    await engine.relay.drainAll();
    await engine.projection.projector.catchUp();
    await list.compactor.poll();
    clock.now += 60_000;
    await list.compactor.flushIfDue();
  };

  // 1. pages of a 5,000-conversation user
  const tenant = newUuid();
  const [user, sender] = [newUuid(), newUuid()];
  say(`setting up a user in ${CONVERSATIONS} conversations …`);
  const groups: Uuid[] = [];
  await inBatches(CONVERSATIONS, 100, async () => groups.push((await c.createGroup({ tenant, owner: sender, members: [user] })).group));
  await inBatches(CONVERSATIONS, 100, async (i) => c.send({ tenant, group: groups[i]!, sender, text: `m${i}` }));
  await settle();
  const view = engine.sessionView;
  const first = await view.page(tenant, user, { limit: 50 });
  if (first.total !== CONVERSATIONS) throw new Error(`the snapshot holds ${first.total} rows, not ${CONVERSATIONS}`);
  // a cursor at row 2,500: 12 pages of 200, then one of 100
  let cur: string | undefined;
  for (let i = 0; i < 12; i++) cur = (await view.page(tenant, user, { limit: 200, ...(cur ? { cursor: cur } : {}) })).nextCursor!;
  const deep = await view.page(tenant, user, { limit: 100, cursor: cur! });
  const deepCursor = deep.nextCursor!;
  const today = () => engine.projection.sessions.listSessions({ tenant, user, limit: 50 });
  const paths: Record<string, () => Promise<unknown>> = {
    today,
    snapshot: () => view.page(tenant, user, { limit: 50 }),
    "snapshot-deep": () => view.page(tenant, user, { limit: 50, cursor: deepCursor }),
    served: async () => {
      const p = await view.page(tenant, user, { limit: 50 });
      return c.conversationSummaries(tenant, user, p.rows.map((r) => r.conversation));
    },
  };
  const results: Record<string, number[]> = Object.fromEntries(Object.keys(paths).map((k) => [k, []]));
  const cold: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, op] of Object.entries(paths)) results[name]!.push(await timeEach(PAGES, op));
    cold.push(await timeEach(3, async () => {
      view.snapshots.clear();
      await view.page(tenant, user, { limit: 50 });
    }));
  }
  const base = median(results.today!);
  const pageReport: Record<string, { usPerPage: number; ratioToToday: number }> = Object.fromEntries([...Object.entries(results).map(([k, xs]) => [k, { usPerPage: r2(median(xs)), ratioToToday: r4(median(xs) / base) }]), ["cold", { usPerPage: r2(median(cold)), ratioToToday: r4(median(cold) / base) }]]);
  say("\n1. a 50-row page of a 5,000-conversation user (median of rounds, µs per page; ratio to today's ZREVRANGE + pipelined reads)");
  for (const [k, v] of Object.entries(pageReport)) say(`   ${k.padEnd(14)} ${v.usPerPage.toFixed(1).padStart(10)} µs   ${v.ratioToToday.toFixed(4)}×`);

  // 2. + 3. unread maintenance per delivered entry, and J-1's write count
  say(`\n2. a ${MEMBERS}-member group, ${MESSAGES} messages at 20 msg/s (injected clock), window ${WINDOW_MS / 1000} s …`);
  const members = Array.from({ length: MEMBERS - 1 }, () => newUuid());
  const t2 = newUuid();
  const { group } = await c.createGroup({ tenant: t2, owner: sender, members });
  const writesBefore = await rowWrites();
  const projection: number[] = [];
  const listing: number[] = [];
  let delivered = 0;
  const start = clock.now;
  const ROUND_MSGS = 20; // one delivery round per simulated second
  for (let m = 0; m < MESSAGES; m += ROUND_MSGS) {
    for (let k = 0; k < ROUND_MSGS && m + k < MESSAGES; k++) {
      await c.send({ tenant: t2, group, sender, text: `x${m + k}` });
      clock.now += MSG_INTERVAL_MS;
    }
    await engine.relay.drainAll();
    const a = process.hrtime.bigint();
    await engine.projection.projector.catchUp();
    const b = process.hrtime.bigint();
    await list.compactor.poll();
    await list.compactor.flushIfDue();
    const e = process.hrtime.bigint();
    projection.push(Number(b - a) / 1000);
    listing.push(Number(e - b) / 1000);
    delivered += Math.min(ROUND_MSGS, MESSAGES - m) * MEMBERS;
  }
  const span = clock.now - start;
  clock.now += WINDOW_MS;
  const f0 = process.hrtime.bigint();
  await list.compactor.flushIfDue();
  const finalFlush = Number(process.hrtime.bigint() - f0) / 1000;
  const sum = (xs: number[]) => xs.reduce((s, x) => s + x, 0);
  const projPer = sum(projection) / delivered;
  const listPer = (sum(listing) + finalFlush) / delivered;
  const writes = (await rowWrites()) - writesBefore;
  const perMember = writes / MEMBERS;
  const bound = Math.ceil(span / WINDOW_MS) + 1;
  say(`   registration write (today, baseline)  ${projPer.toFixed(2).padStart(8)} µs per delivered entry`);
  say(`   conversation-list maintenance         ${listPer.toFixed(2).padStart(8)} µs per delivered entry   ${(listPer / projPer).toFixed(2)}×`);
  say(`\n3. J-1 on this run: ${writes} row writes for ${MEMBERS} members = ${perMember.toFixed(2)} per member per conversation (bound ceil(${span / 1000}/${WINDOW_MS / 1000})+1 = ${bound}); compression ${(MESSAGES / perMember).toFixed(1)} messages per write`);
  if (JSON_ONLY) {
    console.log(JSON.stringify({
      pages: pageReport, maintenance: { deliveredEntries: delivered, registrationUsPerEntry: r2(projPer), listUsPerEntry: r2(listPer), ratio: r2(listPer / projPer) },
      j1: { members: MEMBERS, messages: MESSAGES, spanMs: span, windowMs: WINDOW_MS, rowWrites: writes, perMember: r2(perMember), bound },
    }, null, 2));
  }
} finally {
  await engine.stop();
  await store.close();
  await redis.stop();
}
