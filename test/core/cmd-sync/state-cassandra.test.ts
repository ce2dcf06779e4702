/**
 * CassandraCmdStateStore on a real single-node Cassandra (the run's shared node, see
 * test/harness/cassandra.ts) with the slots' leases on a real redis-server: the store table's
 * cases (state-scenarios.ts, the same expectations as on Redis), the fence and an old owner past
 * it, two writers racing max merges on the same rows, and the runtime choosing this store when Cassandra
 * is configured. Rows are read raw with the driver.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import cassandra from "cassandra-driver";
import {
  callScript, CassandraCmdStateStore, cmdStateKeys, cassandraOptionsFromEnv, CMD_CASSANDRA_ACTIVE_TABLE, CMD_CASSANDRA_STATE_TABLE, CmdFencedError, cmdMetrics,
  EngineRuntime, KeySpace, newUuid, RedisStore, slotOfUser, unitLeaseKey, type Fence, type Uuid,
} from "../../../core/index.js";
import { sharedCassandra, uniqueKeyspace } from "../../harness/cassandra.js";
import { mulberry32 } from "../../harness/random.js";
import { startRedis, type RedisServer } from "../../harness/redis.js";
import { SOLO, takeLease, useCmdRedis, usersInSlot } from "./fixture.js";
import { ch, cmdStateScenarios, row, type StateStoreFixture } from "./state-scenarios.js";

interface CassandraFixture extends StateStoreFixture {
  contactPoints: string[];
  keyspace: string;
  raw: cassandra.Client;
  /** Another store over the same key space (a second writer). */
  storeFor(space: KeySpace): Promise<CassandraCmdStateStore>;
  rawRows(tenant: Uuid, user: Uuid): Promise<{ state: Record<string, number | string>[]; active: Record<string, number | string>[] }>;
}

const plain = (r: cassandra.types.Row): Record<string, number | string> => {
  const o: Record<string, number | string> = {};
  for (const k of r.keys()) {
    const v = r.get(k);
    o[k] = v instanceof cassandra.types.Long ? v.toNumber() : typeof v === "number" ? v : String(v);
  }
  return o;
};

function useCmdCassandra(): CassandraFixture {
  const redis = useCmdRedis("single");
  const opened: CassandraCmdStateStore[] = [];
  const fx = {} as CassandraFixture;
  before(async () => {
    fx.contactPoints = [(await sharedCassandra()).contactPoint];
    fx.keyspace = uniqueKeyspace("cmdstate");
    fx.raw = new cassandra.Client({ contactPoints: fx.contactPoints, localDataCenter: "datacenter1", protocolOptions: { maxVersion: 4 } });
  });
  after(async () => {
    for (const s of opened) await s.close();
    await fx.raw?.shutdown();
  });
  Object.defineProperty(fx, "store", { get: () => redis.store });
  fx.storeFor = async (space) => {
    const s = new CassandraCmdStateStore({ store: redis.store, keys: space, cassandra: { contactPoints: fx.contactPoints, keyspace: fx.keyspace } });
    opened.push(s);
    await s.init();
    return s;
  };
  fx.fresh = async () => {
    const space = new KeySpace(`cmd${newUuid().slice(0, 8)}`);
    return { space, states: await fx.storeFor(space) };
  };
  fx.rawRows = async (tenant, user) => {
    const q = (t: string) => fx.raw.execute(`SELECT * FROM ${fx.keyspace}.${t} WHERE tenant_id = ? AND user_id = ?`, [tenant, user], { prepare: true });
    return { state: (await q(CMD_CASSANDRA_STATE_TABLE)).rows.map(plain), active: (await q(CMD_CASSANDRA_ACTIVE_TABLE)).rows.map(plain) };
  };
  fx.dump = async (_space, tenant, users) => {
    const out: string[] = [];
    for (const u of users) out.push(JSON.stringify(await fx.rawRows(tenant, u)));
    return out.join("\n");
  };
  return fx;
}

const fencedCount = async (layer: "lease" | "row") => (await cmdMetrics.cassandraFenced.get()).values.find((v) => v.labels.layer === layer)?.value ?? 0;

cmdStateScenarios("CassandraCmdStateStore", useCmdCassandra);

describe("CassandraCmdStateStore: fencing, races, the runtime", { timeout: 300_000 }, () => {
  const fx = useCmdCassandra();

  it("fencing: the lease check refuses an old fence; past it, an old owner's older values move no cell back (each cell's timestamp is its value)", async () => {
    const { space, states } = await fx.fresh();
    const tenant = newUuid();
    const [a] = usersInSlot(tenant, 1);
    const slot = slotOfUser(tenant, a!);
    const leaseKey = unitLeaseKey(space, "slot", slot);
    const redis = fx.store.clientForKey(leaseKey);
    const nodeB = await takeLease(fx.store, space, slot);
    // node-b's own store (its process): what it remembers is what it wrote
    const bStates = await fx.storeFor(space);
    await bStates.upsertStates([row(tenant, a!, "r____cmd", 1, 100), row(tenant, a!, "s____cmd", 1, 100)], nodeB);
    // node-c takes the slot over from node-b (as a node takes a dead owner's unit: token + 1) and writes r
    const took = await callScript(redis, "acquireUnit", [leaseKey], ["node-b", String(nodeB.token), "node-c"]);
    assert.equal(Number(took[0]), 0);
    const nodeC: Fence = { owner: "node-c", token: Number(took[1]) };
    assert.equal(nodeC.token, nodeB.token + 1);
    await states.upsertStates([row(tenant, a!, "r____cmd", 2, 200)], nodeC);
    // node-c's store did not know r (a table of value timestamps: it wrote blind), so r's entry at
    // 100 is left for a listing to delete
    assert.equal((states as CassandraCmdStateStore).readsBeforeUpsert, false);
    assert.deepEqual((await states.listActive(tenant, a!, 10)).map((s) => [s.channel.channelId, s.activeAt]), [["r____cmd", 200], ["s____cmd", 100]]);
    const afterC = await fx.dump(space, tenant, [a!]);

    // layer 1: node-b's fence is refused by the lease check, nothing written
    const lease0 = await fencedCount("lease");
    await assert.rejects(bStates.upsertStates([row(tenant, a!, "r____cmd", 9, 900), row(tenant, a!, "s____cmd", 9, 900)], nodeB), CmdFencedError);
    await assert.rejects(bStates.advanceReadSeqs([{ tenant, user: a!, channel: ch("r____cmd"), readSeq: 9 }], nodeB), CmdFencedError);
    assert.equal(await fencedCount("lease") - lease0, 2);
    assert.equal(await fx.dump(space, tenant, [a!]), afterC);

    // past the lease check (node-b checked it before it paused; the lease reads as it did then),
    // node-b's store still remembers r as it wrote it (1 at 100) and writes r older than node-c
    // did (1 at 150): each cell carries its value's timestamp, so node-c's higher values stay
    await redis.hset(leaseKey, "owner", "node-b", "token", String(nodeB.token));
    await bStates.upsertStates([row(tenant, a!, "r____cmd", 1, 150)], nodeB);
    await bStates.advanceReadSeqs([{ tenant, user: a!, channel: ch("r____cmd"), readSeq: 1 }], nodeB);
    assert.deepEqual(await states.get(tenant, a!, ch("r____cmd")), { tenant, user: a!, channel: ch("r____cmd"), readSeq: 2, deletedToSeq: 0, activeAt: 200, updatedAt: 1000, lastMsgSeq: 0 });
    // the index entry it added at 150 is older than the row: listed once, at 200, and the entry goes
    assert.deepEqual((await states.listActive(tenant, a!, 10)).map((s) => [s.channel.channelId, s.activeAt]), [["r____cmd", 200], ["s____cmd", 100]]);
    assert.equal(await fx.dump(space, tenant, [a!]), afterC, "nothing moved back, nothing left over");
    // and what node-b really has beyond node-c's is a max merge of real values
    await bStates.upsertStates([row(tenant, a!, "s____cmd", 3, 300)], nodeB);
    assert.deepEqual(await states.get(tenant, a!, ch("s____cmd")), { tenant, user: a!, channel: ch("s____cmd"), readSeq: 3, deletedToSeq: 0, activeAt: 300, updatedAt: 1000, lastMsgSeq: 0 });
    const raw = await fx.rawRows(tenant, a!);
    assert.deepEqual(raw.state.map((r) => [r.channel_id, r.read_seq, r.active_at]).sort(), [["r____cmd", 2, 200], ["s____cmd", 3, 300]]);
  });

  it("two writers racing max merges on the same rows: the final values are the maxima of the inputs, one index entry per row", async (t) => {
    const space = new KeySpace(`cmd${newUuid().slice(0, 8)}`);
    const [w1, w2] = [await fx.storeFor(space), await fx.storeFor(space)];
    const tenant = newUuid();
    const users = usersInSlot(tenant, 2);
    const channels = ["c0____cmd", "c1____cmd", "c2____cmd", "c3____cmd"];
    const rand = mulberry32(13);
    const int = (n: number) => Math.floor(rand() * n);
    const inputs: ReturnType<typeof row>[] = [];
    const reads: { user: Uuid; channelId: string; readSeq: number }[] = [];
    const batch = () => {
      const b = users.flatMap((u) => channels.map((c) => row(tenant, u, c, int(50), 1000 + int(500), { deletedToSeq: int(30), updatedAt: 5000 + int(1000) })));
      inputs.push(...b);
      return b;
    };
    // every row exists before the race, so that every read advance applies (a patch for a missing row is a no-op)
    await w1.upsertStates(batch(), SOLO);
    const writer = async (w: CassandraCmdStateStore) => {
      for (let round = 0; round < 6; round++) {
        await w.upsertStates(batch(), SOLO);
        const patches = users.map((u) => ({ tenant, user: u, channel: ch(channels[int(channels.length)]!), readSeq: int(80) }));
        for (const p of patches) reads.push({ user: p.user, channelId: p.channel.channelId, readSeq: p.readSeq });
        await w.advanceReadSeqs(patches, SOLO, 9000 + round);
      }
    };
    await Promise.all([writer(w1), writer(w2)]);
    for (const u of users) {
      // entries a racing writer added at an active time the other passed are left for a listing to delete
      const listed = await w1.listActive(tenant, u, 100);
      t.diagnostic(`${u}: ${listed.length} rows listed`);
      const raw = await fx.rawRows(tenant, u);
      const expected = channels.map((c) => {
        const mine = inputs.filter((i) => i.user === u && i.channel.channelId === c);
        const read = Math.max(...mine.map((i) => i.readSeq), ...reads.filter((r) => r.user === u && r.channelId === c).map((r) => r.readSeq));
        return [c, read, Math.max(...mine.map((i) => i.deletedToSeq)), Math.max(...mine.map((i) => i.activeAt))];
      });
      assert.deepEqual(raw.state.map((r) => [r.channel_id, r.read_seq, r.deleted_to_seq, r.active_at]).sort(), expected.sort());
      // updated at is one of the values written (the row's own history decides which), never invented
      const written = new Set([...inputs.map((i) => i.updatedAt), ...Array.from({ length: 6 }, (_x, r) => 9000 + r)]);
      for (const r of raw.state) assert.ok(written.has(Number(r.updated_at)), `updated_at ${r.updated_at}`);
      assert.deepEqual(raw.active.map((r) => [r.channel_id, r.active_at]).sort(), raw.state.map((r) => [r.channel_id, r.active_at]).sort(), "after a listing, one index entry per row, at its active_at");
    }
  });

  it("the runtime with Cassandra configured keeps the CMD state there: send, sync, ack end in Cassandra rows and no Redis cmdstate key", async () => {
    let server: RedisServer | undefined;
    let store: RedisStore | undefined;
    let rt: EngineRuntime | undefined;
    try {
      server = await startRedis();
      store = new RedisStore({ kind: "instances", addrs: [server.addr] });
      const prefix = `cc${newUuid().slice(0, 8)}`;
      rt = new EngineRuntime({
        store, keyPrefix: prefix, dispatch: { clusterId: "test", topicId: "dispatch", partitionCount: 2 },
        cassandra: { contactPoints: fx.contactPoints, keyspace: fx.keyspace }, projection: { background: false }, relayIntervalMs: 0,
        conversationList: { compactor: { background: false } }, cmd: { catchUpIntervalMs: 0, flushIntervalMs: 0 }, log: () => {},
      });
      assert.equal(rt.cmd.states.kind, "cassandra");
      await rt.start();
      const tenant = newUuid();
      const [owner, a] = [newUuid(), newUuid()];
      const g = await rt.conversations.createGroup({ tenant, owner, members: [owner, a] });
      const bytes = (s: string) => new TextEncoder().encode(s);
      for (let i = 0; i < 3; i++) await rt.cmd.send({ tenant, channelId: g.group, channelType: 2, from: owner, to: null, noPersist: false, payload: bytes(`m${i}`) });
      const synced = await rt.cmd.syncLocal(tenant, a, 10);
      assert.deepEqual(synced.messages.map((m) => m.messageSeq), [1, 2, 3]);
      const ack = await rt.cmd.ackLocal(tenant, a, 3);
      assert.equal(ack.warning, null);
      await rt.cmd.flush();
      // by hand: a acknowledged seq 3 of the group's channel; the owner sent all three (its own read is its seq)
      const rawA = await fx.rawRows(tenant, a);
      assert.deepEqual(rawA.state.map((r) => [r.channel_id, r.channel_type, r.read_seq]), [[`${g.group}____cmd`, 2, 3]]);
      assert.deepEqual(rawA.active.map((r) => [r.channel_id, r.active_at]), rawA.state.map((r) => [r.channel_id, r.active_at]));
      assert.deepEqual((await fx.rawRows(tenant, owner)).state.map((r) => [r.channel_id, r.read_seq]), [[`${g.group}____cmd`, 3]]);
      assert.deepEqual((await rt.cmd.syncLocal(tenant, a, 10)).messages, [], "nothing new after the ack");
      assert.deepEqual((await rt.cmd.stateOf(tenant, a, 10)).map((s) => [s.channel.channelId, s.readSeq]), [[`${g.group}____cmd`, 3]]);
      // one redis-server: any key's client lists every key of the prefix
      const client = store.clientForKey(cmdStateKeys(new KeySpace(prefix), slotOfUser(tenant, a)).state);
      const redisKeys = await client.keys(`${prefix}:*cmdstate*`);
      const indexKeys = await client.keys(`${prefix}:*cmdactive*`);
      assert.deepEqual([...redisKeys, ...indexKeys], [], "no CMD state in Redis");
    } finally {
      await rt?.stop();
      await store?.close();
      await server?.stop();
    }
  });

  it("the environment rule is the authority's: contact points set → Cassandra options, none → null", () => {
    assert.equal(cassandraOptionsFromEnv({}), null);
    assert.equal(cassandraOptionsFromEnv({ QIM_CASSANDRA_CONTACT_POINTS: " , " }), null);
    assert.deepEqual(cassandraOptionsFromEnv({ QIM_CASSANDRA_CONTACT_POINTS: "10.0.0.1:9042, 10.0.0.2", QIM_CASSANDRA_KEYSPACE: "k" }),
      { contactPoints: ["10.0.0.1:9042", "10.0.0.2"], keyspace: "k" });
  });

  it("an unreachable Cassandra fails init with one UNAVAILABLE line, as the authority's", async () => {
    const s = new CassandraCmdStateStore({ store: fx.store, keys: new KeySpace("down"), cassandra: { contactPoints: ["127.0.0.1:1"], keyspace: uniqueKeyspace("down"), connectTimeoutMs: 500 } });
    await assert.rejects(s.init(), (err: Error & { code?: string }) => {
      assert.equal(err.code, "UNAVAILABLE");
      assert.match(err.message, /^cannot reach Cassandra at 127\.0\.0\.1:1: /);
      assert.ok(!err.message.includes("\n"));
      return true;
    });
    await s.close();
  });
});
