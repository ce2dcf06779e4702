/**
 * bench/presence (issue 28, spec 003 §2.1) on a real qim-node process that is a one-node engine
 * cluster (so presence writes and reads its Redis watch entries as on a real cluster), devices
 * driven by the load generator's client, in one run, rounds alternating:
 *   baseline: U users' devices reconnect in a loop (open, AUTH, close) for --seconds, nobody watching;
 *   watched:  the same, while W watchers per user (devices of other members of the users' groups)
 *             hold presence subscriptions to every one of them.
 * Reconnects per second in each, and their ratio (watched / baseline): what presence costs a
 * reconnect storm. Also the PRESENCE_UPDATE frames and states the watchers got against the
 * changes made (two per reconnect: online, offline), which the merge window folds, and the Redis
 * commands per reconnect in each (INFO commandstats before and after).
 * Usage: node dist/bench/presence.js [--users U] [--watchers W] [--seconds S] [--rounds R] [--output json]
 */
import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { flag } from "./args.js";
import { LoadDevice, openDevices, startTarget, type Target } from "./loadgen/index.js";

const argv = process.argv.slice(2);
const JSON_OUT = argv.includes("--output") && argv[argv.indexOf("--output") + 1] === "json";
const USERS = flag("--users", 400);
const WATCHERS = flag("--watchers", 10);
const SECONDS = flag("--seconds", 5);
const ROUNDS = flag("--rounds", 3);
/** Users per group (and so per PRESENCE_SUB: PRESENCE_SUB_MAX_USERS). */
const GROUP_SIZE = 100;
/** Reconnect loops running at once. */
const CONCURRENCY = 32;

const say = (line: string) => process.stderr.write(`${line}\n`);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Reconnects `users`' devices for `ms`, CONCURRENCY at a time; returns how many reconnects finished. */
async function churn(t: Target, users: string[], ms: number): Promise<number> {
  let done = 0;
  let next = 0;
  const t0 = Date.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (Date.now() - t0 < ms) {
      const user = users[next++ % users.length]!;
      const device = `churn-${randomUUID().slice(0, 8)}`;
      const d = await LoadDevice.open(t.url, t.ca, await t.sign(user, device), user, device);
      d.close();
      done++;
    }
  }));
  return done;
}

const t = await startTarget({ cluster: true });
const redis = new Redis({ host: "127.0.0.1", port: t.redis.port, lazyConnect: true });
await redis.connect();
/** Every command Redis ran so far (INFO commandstats' calls, summed; the INFO itself included). */
async function redisCalls(): Promise<number> {
  return [...(await redis.info("commandstats")).matchAll(/calls=(\d+)/g)].reduce((a, m) => a + Number(m[1]), 0);
}
const out: Record<string, unknown> = { users: USERS, watchersPerUser: WATCHERS, seconds: SECONDS, rounds: ROUNDS };
try {
  const users = Array.from({ length: USERS }, () => randomUUID());
  // groups of GROUP_SIZE churning users and WATCHERS watchers, each watcher subscribed to its group's users
  const watchers: LoadDevice[] = [];
  const groupOf = new Map<LoadDevice, string>();
  for (let g = 0; g < USERS; g += GROUP_SIZE) {
    const members = users.slice(g, g + GROUP_SIZE);
    const ws = Array.from({ length: WATCHERS }, () => randomUUID());
    const { group } = await t.admin.createGroup({ tenant: t.tenant, group: "", owner: ws[0]!, members: [...ws.slice(1), ...members] });
    const devs = await openDevices(WATCHERS, CONCURRENCY, async (i) => LoadDevice.open(t.url, t.ca, await t.sign(ws[i]!, `w${g}-${i}`), ws[i]!, `w${g}-${i}`));
    for (const d of devs) {
      const a = await d.request({ $case: "presenceSub", presenceSub: { group, users: members, unsubscribe: false } });
      if (a.body?.$case !== "presenceSubAck" || a.body.presenceSubAck.states.length !== members.length) throw new Error(`PRESENCE_SUB answered ${a.body?.$case}`);
      groupOf.set(d, group);
    }
    watchers.push(...devs);
  }
  say(`# ${watchers.length} watchers hold ${watchers.length * GROUP_SIZE} subscriptions over ${USERS} users`);
  const base: number[] = [];
  const watched: number[] = [];
  const calls = { base: 0, baseReconnects: 0, watched: 0, watchedReconnects: 0 };
  let changes = 0;
  const framesBefore = () => watchers.reduce((a, d) => a + d.presence.frames, 0);
  const statesBefore = () => watchers.reduce((a, d) => a + d.presence.states, 0);
  const unsubscribe = async (yes: boolean) => {
    for (let i = 0; i < watchers.length; i++) {
      const g = Math.floor(i / WATCHERS) * GROUP_SIZE;
      // PRESENCE_SUB_RATE: 1/s per user and group, burst 5 — each watcher toggles once per round
      const r = await watchers[i]!.request({ $case: "presenceSub", presenceSub: { group: groupOf.get(watchers[i]!)!, users: yes ? [] : users.slice(g, g + GROUP_SIZE), unsubscribe: yes } });
      if (r.body?.$case !== "presenceSubAck") throw new Error(`PRESENCE_SUB answered ${r.body?.$case}: ${JSON.stringify(r.body)}`);
    }
  };
  // warm-up (JIT, TLS session caches, Redis) before either is measured
  await churn(t, users, 2000);
  await sleep(2500);
  const measureWatched = async (r: number) => {
    const f0 = framesBefore();
    const s0 = statesBefore();
    const c0 = await redisCalls();
    const n = await churn(t, users, SECONDS * 1000);
    await sleep(500);
    calls.watched += (await redisCalls()) - c0;
    calls.watchedReconnects += n;
    watched.push(n / SECONDS);
    changes += 2 * n;
    await sleep(2500);
    say(`round ${r + 1}: watched ${(n / SECONDS).toFixed(0)} reconnects/s; watchers got ${framesBefore() - f0} frames, ${statesBefore() - s0} states`);
  };
  const measureBase = async (r: number) => {
    // every subscription dropped (the watchers stay connected), then taken again
    await unsubscribe(true);
    const c0 = await redisCalls();
    const b = await churn(t, users, SECONDS * 1000);
    await sleep(500);
    calls.base += (await redisCalls()) - c0;
    calls.baseReconnects += b;
    base.push(b / SECONDS);
    say(`round ${r + 1}: baseline ${(b / SECONDS).toFixed(0)} reconnects/s`);
    await unsubscribe(false);
    await sleep(1000);
  };
  for (let r = 0; r < ROUNDS; r++) {
    // the order alternates: the machine's drift (warming, neighbours) does not favour one side
    if (r % 2 === 0) {
      await measureWatched(r);
      await measureBase(r);
    } else {
      await measureBase(r);
      await measureWatched(r);
    }
  }
  const frames = framesBefore();
  const states = statesBefore();
  Object.assign(out, {
    baselineReconnectsPerSec: Math.round(median(base)), watchedReconnectsPerSec: Math.round(median(watched)),
    ratio: Number((median(watched) / median(base)).toFixed(2)),
    watchedChanges: changes, watcherFrames: frames, watcherStates: states,
    statesPerChangePerWatcher: Number((states / (changes * WATCHERS)).toFixed(3)),
    baselineRedisCallsPerReconnect: Number((calls.base / calls.baseReconnects).toFixed(1)),
    watchedRedisCallsPerReconnect: Number((calls.watched / calls.watchedReconnects).toFixed(1)),
  });
} finally {
  redis.disconnect();
  await t.stop();
}
if (JSON_OUT) console.log(JSON.stringify(out));
else for (const [k, v] of Object.entries(out)) console.log(`${k}: ${v}`);
