/**
 * bench/cmd — the CMD sync core on one private redis-server, each figure next to a baseline taken
 * in the same run:
 *   1. intents/s into the pending buffer (CmdPendingUpdater.pushIntent: validation, coalescing,
 *      the per-user and per-slot indexes), INTENTS intents of 1–3 users over CHANNELS channels,
 *      against a bare Map.set per (channel, user) of the same intents (the floor of any buffer);
 *   2. flushed rows/s: ROWS pending (user, channel) entries flushed through RedisCmdStateStore
 *      (batches of 500 of one slot, one fenced max-merge Lua call each, awaited one after another)
 *      against a raw pipelined HSET of the same fields and values into the same slot hashes
 *      (500 a pipeline, as many pipelines in flight as the flush has batches: none — awaited one
 *      after another too), i.e. what the Lua merge, the index and the fence cost over a blind write;
 *   3. sync latency for a user with SYNC_CHANNELS (200) active CMD channels, each holding one command
 *      for the user past its read seq (half flushed to durable state, half still pending), through
 *      a whole runtime's CmdSync.syncLocal (durable + pending merge, order and limit, recipient
 *      filter, the generation's records), against a raw pipelined read of the same 200 channels'
 *      history entries (one ZRANGEBYSCORE each, one round trip): the floor of loading them.
 *   4. with --cassandra: flushed rows/s through CassandraCmdStateStore (one node of the test
 *      harness, or QIM_TEST_CASSANDRA; leases on the same redis-server) against a raw write of the
 *      same rows to the same Cassandra (blind INSERTs of the state and index rows into tables of the
 *      same schema, one unlogged batch per user and table, as many users in flight as the store's
 *      bound: CMD_CASSANDRA_FLUSH_CONCURRENCY × CMD_CASSANDRA_USER_CONCURRENCY), i.e. what the
 *      read, the conditional batch (Paxos) and the fence cost over a blind write (goal ≥ 0.5×);
 *      beside it the same flush one slot after another (flushConcurrency 1, the code before issue
 *      26) and RedisCmdStateStore flushing the same CASSANDRA_ROWS entries (5 channels per user).
 * Rounds alternate the paths; medians are printed. Wall-clock figures move between machines; the
 * ratios of one run do not.
 * Usage: node dist/bench/cmd/cmd.js [--rounds R] [--intents N] [--rows N] [--cassandra [--cassandra-rows N]] [--json]
 * (the Cassandra part alone, quickly: --rounds 3 --intents 1000 --rows 1000 --syncs 10 --cassandra)
 */
import cassandra from "cassandra-driver";
import {
  CassandraCmdStateStore, CMD_CASSANDRA_FLUSH_CONCURRENCY, CMD_CASSANDRA_USER_CONCURRENCY, cmdChannelKeys, cmdStateField, cmdStateKeys, CmdPendingUpdater, EngineRuntime, KeySpace, newUuid, RedisCmdStateStore, RedisHashAuthority, RedisStore, slotOfUser,
  type ConversationIntent, type Uuid,
} from "../../core/index.js";
import { sharedCassandra, uniqueKeyspace } from "../../test/harness/cassandra.js";
import { startRedis } from "../../test/harness/redis.js";

const args = process.argv.slice(2);
const flag = (name: string, dflt: number) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const JSON_ONLY = args.includes("--json");
const ROUNDS = flag("--rounds", 3);
const INTENTS = flag("--intents", 200_000);
const ROWS = flag("--rows", 50_000);
const CHANNELS = 1000;
const SYNC_CHANNELS = 200;
const SYNCS = flag("--syncs", 200);
const CASSANDRA = args.includes("--cassandra");
const CASSANDRA_ROWS = flag("--cassandra-rows", 5000);
const CASSANDRA_CHANNELS_PER_USER = 5;
const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;
const say = (line: string) => { if (!JSON_ONLY) console.log(line); };
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const r2 = (x: number) => +x.toFixed(2);
const SOLO = { owner: "", token: 0 };
const seconds = (t0: bigint) => Number(process.hrtime.bigint() - t0) / 1e9;

const redis = await startRedis();
const store = new RedisStore({ kind: "instances", addrs: [redis.addr] });
try {
  const tenant = newUuid();
  const users: Uuid[] = Array.from({ length: 5000 }, () => newUuid());
  const intents: ConversationIntent[] = Array.from({ length: INTENTS }, (_, i) => {
    const n = 1 + (i % 3);
    const m = new Map<Uuid, number>();
    for (let k = 0; k < n; k++) m.set(users[(i * 7 + k * 13) % users.length]!, 0);
    return { tenant, channel: { channelId: `g${i % CHANNELS}____cmd`, channelType: 2 }, messageSeq: 1 + Math.floor(i / CHANNELS), activeAt: 1_700_000_000_000 + i, userReadSeqs: m };
  });

  const push: number[] = [];
  const floor: number[] = [];
  const flushRate: number[] = [];
  const rawRate: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    // 1. pushIntent
    const space = new KeySpace(`bc${newUuid().slice(0, 6)}`);
    const states = new RedisCmdStateStore(store, space);
    const buffer = new CmdPendingUpdater({ store: states, dataDir: null, slotOf: slotOfUser, fenceOf: () => SOLO, flushIntervalMs: 0, maxPending: 10_000_000, log: () => {} });
    let t0 = process.hrtime.bigint();
    for (const i of intents) buffer.pushIntent(i);
    push.push(INTENTS / seconds(t0));
    const bare = new Map<string, number>();
    t0 = process.hrtime.bigint();
    for (const i of intents) for (const [u, r] of i.userReadSeqs) {
      const k = `${i.channel.channelType}|${i.channel.channelId}|${u}`;
      bare.set(k, Math.max(bare.get(k) ?? 0, r));
    }
    floor.push(INTENTS / seconds(t0));

    // 2. flush ROWS entries (a fresh buffer of exactly ROWS distinct (user, channel) entries)
    const space2 = new KeySpace(`bf${newUuid().slice(0, 6)}`);
    const states2 = new RedisCmdStateStore(store, space2);
    const flusher = new CmdPendingUpdater({ store: states2, dataDir: null, slotOf: slotOfUser, fenceOf: () => SOLO, flushIntervalMs: 0, maxPending: 10_000_000, log: () => {} });
    const rows: { user: Uuid; channelId: string; activeAt: number }[] = [];
    for (let k = 0; k < ROWS; k++) {
      const user = users[k % users.length]!;
      const channelId = `c${Math.floor(k / users.length)}____cmd`;
      rows.push({ user, channelId, activeAt: 1_700_000_000_000 + k });
      flusher.pushIntent({ tenant, channel: { channelId, channelType: 2 }, messageSeq: 1, activeAt: 1_700_000_000_000 + k, userReadSeqs: new Map([[user, 0]]) });
    }
    t0 = process.hrtime.bigint();
    const report = await flusher.flush();
    const flushS = seconds(t0);
    if (report.rows !== ROWS || flusher.size() !== 0) throw new Error(`flush wrote ${report.rows} of ${ROWS}`);
    flushRate.push(ROWS / flushS);

    // raw: the same fields and values, HSET pipelined 500 a pipeline per slot hash, one pipeline at a time
    const space3 = new KeySpace(`br${newUuid().slice(0, 6)}`);
    const bySlot = new Map<number, { key: string; field: string; value: string }[]>();
    for (const r of rows) {
      const slot = slotOfUser(tenant, r.user);
      const list = bySlot.get(slot) ?? [];
      list.push({ key: cmdStateKeys(space3, slot).state, field: cmdStateField(tenant, r.user, { channelId: r.channelId, channelType: 2 }), value: `0|0|${r.activeAt}|1` });
      bySlot.set(slot, list);
    }
    t0 = process.hrtime.bigint();
    for (const list of bySlot.values()) {
      for (let k = 0; k < list.length; k += 500) {
        const p = store.clientForKey(list[0]!.key).pipeline();
        for (const w of list.slice(k, k + 500)) p.hset(w.key, w.field, w.value);
        await p.exec();
      }
    }
    rawRate.push(ROWS / seconds(t0));
    say(`round ${round + 1}: push ${Math.round(push.at(-1)!)} intents/s (bare map ${Math.round(floor.at(-1)!)}), flush ${Math.round(flushRate.at(-1)!)} rows/s in ${report.batches} batches (raw HSET ${Math.round(rawRate.at(-1)!)} rows/s)`);
  }
  // 3. sync latency, 200 active channels
  const syncPrefix = `bs${newUuid().slice(0, 6)}`;
  const rt = new EngineRuntime({
    store, keyPrefix: syncPrefix, dispatch: { clusterId: "bench", topicId: "dispatch", partitionCount: 2 },
    authority: new RedisHashAuthority(store, new KeySpace(syncPrefix)), projection: { background: false }, relayIntervalMs: 0,
    conversationList: { compactor: { background: false } }, cmd: { catchUpIntervalMs: 0, flushIntervalMs: 0 }, log: () => {},
  });
  await rt.start();
  const syncLat: number[] = [];
  const rawLat: number[] = [];
  let answered = 0;
  try {
    const user = newUuid();
    const channels: string[] = [];
    for (let c = 0; c < SYNC_CHANNELS; c++) {
      const channelId = `bench-${c}____cmd`;
      channels.push(channelId);
      await rt.cmd.send({ tenant, channelId, channelType: 1, from: null, to: [user], noPersist: false, payload: Buffer.from(`cmd ${c}`) });
      if (c === SYNC_CHANNELS / 2 - 1) await rt.cmd.flush(); // the first half durable, the rest pending
    }
    const keys = channels.map((channelId) => cmdChannelKeys(rt.keys, tenant, { channelId, channelType: 1 }).hist);
    for (let i = 0; i < SYNCS; i++) {
      let t0 = process.hrtime.bigint();
      const r = await rt.cmd.syncLocal(tenant, user, 1000);
      syncLat.push(Number(process.hrtime.bigint() - t0) / 1e6);
      answered = r.messages.length;
      if (answered !== SYNC_CHANNELS) throw new Error(`sync answered ${answered} of ${SYNC_CHANNELS} commands`);
      t0 = process.hrtime.bigint();
      // one instance here, so one pipeline holds every channel's read
      const p = store.clientForKey(keys[0]!).pipeline();
      for (const k of keys) p.zrangebyscore(k, 1, "+inf");
      const got = await p.exec();
      rawLat.push(Number(process.hrtime.bigint() - t0) / 1e6);
      if (!got || got.length !== SYNC_CHANNELS) throw new Error("the raw read missed channels");
    }
  } finally {
    await rt.stop();
  }
  // 4. the Cassandra store's flush against the Redis store's, the same entries, the same round
  const cassFlush: number[] = [];
  const cassSerialFlush: number[] = [];
  const cassRaw: number[] = [];
  const redisFlush: number[] = [];
  if (CASSANDRA) {
    const contactPoint = (await sharedCassandra()).contactPoint;
    const keyspace = uniqueKeyspace("bench_cmd");
    const entries = Array.from({ length: CASSANDRA_ROWS }, (_, k) => ({
      user: users[Math.floor(k / CASSANDRA_CHANNELS_PER_USER) % users.length]!, channelId: `c${k % CASSANDRA_CHANNELS_PER_USER}____cmd`, activeAt: 1_700_000_000_000 + k,
    }));
    const flushThrough = async (states: RedisCmdStateStore | CassandraCmdStateStore, flushConcurrency?: number): Promise<number> => {
      const f = new CmdPendingUpdater({
        store: states, dataDir: null, slotOf: slotOfUser, fenceOf: () => SOLO, flushIntervalMs: 0, maxPending: 10_000_000, log: () => {},
        ...(flushConcurrency !== undefined ? { flushConcurrency } : {}),
      });
      for (const e of entries) f.pushIntent({ tenant, channel: { channelId: e.channelId, channelType: 2 }, messageSeq: 1, activeAt: e.activeAt, userReadSeqs: new Map([[e.user, 0]]) });
      const t0 = process.hrtime.bigint();
      const report = await f.flush();
      const s = seconds(t0);
      if (report.rows !== CASSANDRA_ROWS || f.size() !== 0) throw new Error(`flush wrote ${report.rows} of ${CASSANDRA_ROWS}`);
      return CASSANDRA_ROWS / s;
    };
    // the raw write: tables of the store's schema, blind INSERTs (no read, no condition, no fence)
    const raw = new cassandra.Client({ contactPoints: [contactPoint], localDataCenter: "datacenter1", protocolOptions: { maxVersion: 4 }, queryOptions: { consistency: cassandra.types.consistencies.one, prepare: true } });
    await raw.connect();
    const rawState = `${keyspace}.raw_state`;
    const rawActive = `${keyspace}.raw_active`;
    const Long = cassandra.types.Long;
    const byUser = new Map<Uuid, typeof entries>();
    for (const e of entries) byUser.set(e.user, [...(byUser.get(e.user) ?? []), e]);
    const rawWrite = async (): Promise<number> => {
      await raw.execute(`TRUNCATE ${rawState}`);
      await raw.execute(`TRUNCATE ${rawActive}`);
      const lists = [...byUser.entries()];
      let next = 0;
      const updatedAt = Long.fromNumber(Date.now());
      const one = Long.fromNumber(1);
      const zero = Long.fromNumber(0);
      const worker = async () => {
        while (next < lists.length) {
          const [user, list] = lists[next++]!;
          await Promise.all([
            raw.batch(list.map((e) => ({
              query: `INSERT INTO ${rawState} (tenant_id, user_id, channel_type, channel_id, read_seq, deleted_to_seq, active_at, updated_at, last_msg_seq, fence_token) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
              params: [tenant, user, 2, e.channelId, zero, zero, Long.fromNumber(e.activeAt), updatedAt, one, zero],
            })), { prepare: true, logged: false }),
            raw.batch(list.map((e) => ({
              query: `INSERT INTO ${rawActive} (tenant_id, user_id, active_at, channel_type, channel_id) VALUES (?, ?, ?, ?, ?)`,
              params: [tenant, user, Long.fromNumber(e.activeAt), 2, e.channelId],
            })), { prepare: true, logged: false }),
          ]);
        }
      };
      const t0 = process.hrtime.bigint();
      await Promise.all(Array.from({ length: CMD_CASSANDRA_FLUSH_CONCURRENCY * CMD_CASSANDRA_USER_CONCURRENCY }, worker));
      const s = seconds(t0);
      const n = Number((await raw.execute(`SELECT COUNT(*) AS n FROM ${rawState}`, [], { prepare: false })).first()!.n);
      if (n !== CASSANDRA_ROWS) throw new Error(`the raw write stored ${n} of ${CASSANDRA_ROWS} rows`);
      return CASSANDRA_ROWS / s;
    };
    try {
      for (let round = 0; round < ROUNDS; round++) {
        const cassStore = () => new CassandraCmdStateStore({ store, keys: new KeySpace(`bk${newUuid().slice(0, 6)}`), cassandra: { contactPoints: [contactPoint], keyspace, consistency: "ONE" } });
        for (const [concurrency, out] of [[undefined, cassFlush], [1, cassSerialFlush]] as const) {
          const cass = cassStore();
          await cass.init();
          try {
            // a fresh keyspace prefix but the same tables: empty them so every round writes new rows
            await raw.execute(`TRUNCATE ${keyspace}.cmd_conversation_state`);
            await raw.execute(`TRUNCATE ${keyspace}.cmd_conversation_active`);
            out.push(await flushThrough(cass, concurrency));
          } finally {
            await cass.close();
          }
        }
        if (round === 0) {
          await raw.execute(`CREATE TABLE IF NOT EXISTS ${rawState} (tenant_id uuid, user_id uuid, channel_type int, channel_id text, read_seq bigint, deleted_to_seq bigint, active_at bigint, updated_at bigint, last_msg_seq bigint, fence_token bigint, PRIMARY KEY ((tenant_id, user_id), channel_type, channel_id))`);
          await raw.execute(`CREATE TABLE IF NOT EXISTS ${rawActive} (tenant_id uuid, user_id uuid, active_at bigint, channel_type int, channel_id text, PRIMARY KEY ((tenant_id, user_id), active_at, channel_type, channel_id)) WITH CLUSTERING ORDER BY (active_at DESC, channel_type ASC, channel_id ASC)`);
        }
        cassRaw.push(await rawWrite());
        redisFlush.push(await flushThrough(new RedisCmdStateStore(store, new KeySpace(`bq${newUuid().slice(0, 6)}`))));
        say(`round ${round + 1}: Cassandra store flush ${Math.round(cassFlush.at(-1)!)} rows/s (${CMD_CASSANDRA_FLUSH_CONCURRENCY} slots at once; one slot after another ${Math.round(cassSerialFlush.at(-1)!)} rows/s; raw write ${Math.round(cassRaw.at(-1)!)} rows/s; Redis store ${Math.round(redisFlush.at(-1)!)} rows/s), ${CASSANDRA_ROWS} rows`);
      }
    } finally {
      await raw.shutdown();
    }
  }
  const cassOut = CASSANDRA
    ? {
      cassandraRows: CASSANDRA_ROWS, cassandraFlushConcurrency: CMD_CASSANDRA_FLUSH_CONCURRENCY, cassandraFlushRowsPerSec: Math.round(median(cassFlush)),
      cassandraSerialFlushRowsPerSec: Math.round(median(cassSerialFlush)), cassandraRawWriteRowsPerSec: Math.round(median(cassRaw)),
      cassandraVsRawWrite: +(median(cassFlush) / median(cassRaw)).toFixed(3), cassandraVsSerialFlush: +(median(cassFlush) / median(cassSerialFlush)).toFixed(3),
      redisStoreFlushRowsPerSec: Math.round(median(redisFlush)),
      cassandraVsRedisStore: +(median(cassFlush) / median(redisFlush)).toFixed(3),
    }
    : {};
  const syncOut = {
    syncChannels: SYNC_CHANNELS, syncs: SYNCS, syncMessages: answered,
    syncP50Ms: r2(median(syncLat)), syncP99Ms: r2(quantile(syncLat, 0.99)), rawReadP50Ms: r2(median(rawLat)), rawReadP99Ms: r2(quantile(rawLat, 0.99)),
    syncVsRawRead: r2(median(syncLat) / median(rawLat)),
  };
  const out = {
    ...syncOut, ...cassOut,
    intents: INTENTS, rows: ROWS, rounds: ROUNDS,
    pushIntentsPerSec: Math.round(median(push)), bareMapIntentsPerSec: Math.round(median(floor)), pushVsBareMap: r2(median(push) / median(floor)),
    flushRowsPerSec: Math.round(median(flushRate)), rawHsetRowsPerSec: Math.round(median(rawRate)), flushVsRawHset: r2(median(flushRate) / median(rawRate)),
  };
  if (JSON_ONLY) console.log(JSON.stringify(out));
  else {
    say(`pending buffer: ${out.pushIntentsPerSec} intents/s (${out.pushVsBareMap}× a bare Map of the same entries)`);
    say(`durable flush: ${out.flushRowsPerSec} rows/s (${out.flushVsRawHset}× a raw pipelined HSET of the same rows)`);
    if (CASSANDRA) {
      say(`durable flush on Cassandra: ${cassOut.cassandraFlushRowsPerSec} rows/s, ${CMD_CASSANDRA_FLUSH_CONCURRENCY} slots at once (${cassOut.cassandraVsRawWrite}× a raw write of the same rows to the same Cassandra: ${cassOut.cassandraRawWriteRowsPerSec} rows/s; goal ≥ 0.5×)`);
      say(`  one slot after another: ${cassOut.cassandraSerialFlushRowsPerSec} rows/s (the bounded concurrency: ${cassOut.cassandraVsSerialFlush}×); the Redis store: ${cassOut.redisStoreFlushRowsPerSec} rows/s (${cassOut.cassandraVsRedisStore}×)`);
    }
    say(`sync of a user with ${out.syncChannels} active CMD channels (${out.syncMessages} commands): p50 ${out.syncP50Ms} ms, p99 ${out.syncP99Ms} ms (${out.syncVsRawRead}× a raw pipelined read of the same histories: p50 ${out.rawReadP50Ms} ms)`);
  }
} finally {
  await store.close();
  await redis.stop();
}
