/**
 * Issue 22, "leases never starve": a node's heartbeats and lease renewals go over connections of
 * their own (RedisStore.dedicated), so they never wait behind the node's own work queued on its
 * data connection. ioredis answers one connection's commands in order, so whatever occupies the
 * data connection — a deep pipeline, a long script — delays every command written after it.
 *
 * The data connection is kept occupied by BLPOPs on an empty list, each longer than the node's
 * trust window: a connection's queue held for seconds, as by a deep pipeline, but without this
 * process's CPU in the picture (on a loaded test machine, building and parsing a pipeline that
 * deep is itself what takes the time, and would stall the heartbeat timers whatever the
 * connection). The control: a PING on the data connection is answered only after the BLPOP. The
 * proof: the node's ticks (heartbeat, lease reads) finish while a BLPOP still holds the data
 * connection, and through several lease TTLs of it the node keeps every unit it took. Real
 * redis-server; no wall-clock assertion.
 */
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { ClusterMembership, KeySpace, RedisStore, UNIT_KINDS, type UnitKind } from "../../core/index.js";
import { startRedis, type RedisServer } from "../harness/redis.js";

const LEASE_TTL_MS = 1500;
const HEARTBEAT_MS = 500;
/** How long each BLPOP holds the data connection: longer than the node may go without a heartbeat (TTL − interval). */
const HOLD_S = 2;

describe("the cluster's heartbeats over their own connection", { timeout: 120_000 }, () => {
  let server: RedisServer;
  let data: RedisStore;
  before(async () => {
    server = await startRedis();
    data = new RedisStore({ kind: "instances", addrs: [server.addr] });
  });
  after(async () => {
    await data?.close();
    await server?.stop();
  });

  const hold = () => data.clients()[0]!.blpop(`lane:empty:${process.pid}`, HOLD_S);

  it("a command behind a held data connection waits for it (the control)", async () => {
    const order: string[] = [];
    const held = hold().then(() => order.push("held"));
    const ping = data.clients()[0]!.ping().then(() => order.push("ping"));
    await Promise.all([held, ping]);
    assert.deepEqual(order, ["held", "ping"]);
  });

  it("ticks finish while the data connection is held; no unit is lost through seconds of it", async () => {
    const keys = new KeySpace(`lane${process.pid}`);
    const cluster = new ClusterMembership(data.dedicated(), keys, 4, { nodeId: "lane-1", address: "", version: "test", leaseTtlMs: LEASE_TTL_MS, heartbeatIntervalMs: HEARTBEAT_MS });
    const lost: string[] = [];
    cluster.onChange((kind, unit, owned) => { if (!owned) lost.push(`${kind} ${unit}`); });
    await cluster.start();
    try {
      const held = (k: UnitKind) => cluster.ownedUnits(k).length;
      const at = Object.fromEntries(UNIT_KINDS.map((k) => [k, held(k)]));
      assert.ok(UNIT_KINDS.every((k) => at[k]! > 0), "the only node takes every unit");

      // the data connection held back to back for at least 3 lease TTLs (a loop bound, not an
      // assertion), while the node's own heartbeats also run on their schedule
      let rounds = 0;
      let ticksFirst = 0;
      const start = performance.now();
      for (let i = 0; performance.now() - start < 3 * LEASE_TTL_MS || i < 3; i++) {
        const first: string[] = [];
        const bulk = hold().then(() => first.push("held"));
        const tick = cluster.tick().then(() => first.push("tick"));
        await Promise.all([bulk, tick]);
        rounds++;
        if (first[0] === "tick") ticksFirst++;
      }
      assert.equal(ticksFirst, rounds, `each tick finished while the data connection was held (${rounds} rounds)`);
      assert.deepEqual(lost, [], "no unit lost or dropped");
      for (const k of UNIT_KINDS) assert.equal(held(k), at[k], `${k}: every unit still held`);
    } finally {
      await cluster.stop();
    }
  });
});
