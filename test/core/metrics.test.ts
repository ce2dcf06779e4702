/**
 * The gauges the alert rules of docs/monitoring/ stand on, read from the process's registry after
 * the engine did something whose outcome the test knows: per dispatch partition the verdict and the
 * lag, per Redis instance the registration queue and its dead letters, and each instance's
 * reachability. Real Redis (three instances, so that the per-instance series are more than one).
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { checkpointKey, newUuid, PARTITION_VERDICTS, RedisHashAuthority, RedisStore, registry, userKeys } from "../../core/index.js";
import { startTopology } from "../harness/redis.js";
import { useEngine } from "./fixture.js";
import { newStack } from "./projection-scenarios.js";

/** A metric's series: "label=value,…" (labels sorted) → value; empty when it has none. */
async function series(name: string): Promise<Map<string, number>> {
  const m = (await registry.getMetricsAsJSON()).find((x) => x.name === name);
  return new Map((m?.values ?? []).map((v) => [Object.entries(v.labels).map(([k, x]) => `${k}=${String(x)}`).sort().join(","), Number(v.value)]));
}

const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);

describe("projection gauges (three instances)", () => {
  const fx = useEngine("multi");

  it("verdict and lag per partition, queue depth and dead letters per instance, as the projection last read them", async () => {
    const stack = newStack(fx, new RedisHashAuthority(fx.store, fx.engine.keys));
    await stack.start();
    const partitions = fx.log.identity.partitionCount;
    const verdicts = await series("qim_session_projection_partition_verdict");
    assert.equal(verdicts.size, partitions * 5, "one series per partition and verdict");
    for (let p = 0; p < partitions; p++) {
      for (const v of PARTITION_VERDICTS) assert.equal(verdicts.get(`partition=${p},verdict=${v}`), v === "OK" ? 1 : 0, `partition ${p} ${v}`);
    }
    assert.deepEqual([...(await series("qim_session_projection_checkpoint_lag")).values()], Array(partitions).fill(0));

    // five messages appended to the log, none consumed yet (no background polling here)
    const tenant = fx.tenant();
    const [owner, a, b] = [newUuid(), newUuid(), newUuid()];
    const { group } = await fx.engine.createGroup({ tenant, owner, members: [a, b] });
    for (let i = 0; i < 5; i++) await fx.engine.send({ tenant, group, sender: owner, text: `m${i}` });
    await fx.relay.drainAll();
    await stack.status();
    const lag = await series("qim_session_projection_checkpoint_lag");
    assert.equal(lag.size, partitions);
    assert.equal(sum(lag), 5, "one record per message, all unread");

    // consumed: no lag; each of the three users queued the group for the authority once
    await stack.projector.catchUp();
    let status = await stack.status();
    assert.deepEqual([...(await series("qim_session_projection_checkpoint_lag")).values()], Array(partitions).fill(0));
    const depth = await series("qim_session_conversation_state_queue_depth");
    assert.deepEqual([...depth.keys()].sort(), ["redis_instance=0", "redis_instance=1", "redis_instance=2"]);
    assert.equal(sum(depth), 3);
    for (const q of status.pendingPerInstance) assert.equal(depth.get(`redis_instance=${q.instance}`), q.depth);
    await stack.registration.drainAll();
    await stack.status();
    assert.equal(sum(await series("qim_session_conversation_state_queue_depth")), 0);

    // an item nobody can decode goes to ucs_dead and stays there: the gauge keeps it
    const uk = userKeys(fx.engine.keys, tenant, a);
    await fx.store.clientForKey(uk.ucsPending).rpush(uk.ucsPending, "written|by|hand");
    await stack.registration.drainAll();
    status = await stack.status();
    const dead = await series("qim_session_conversation_state_dead_letter_queue_depth");
    assert.equal(sum(dead), 1);
    const instance = status.pendingPerInstance.find((q) => q.deadLetters === 1)!.instance;
    assert.equal(dead.get(`redis_instance=${instance}`), 1);
    await stack.registration.drainAll();
    await stack.status();
    assert.equal(sum(await series("qim_session_conversation_state_dead_letter_queue_depth")), 1, "draining again does not clear a dead letter");

    // partition 0's checkpoint moved past its high watermark (the log lost records): the verdict
    // series says BEYOND_HIGH and its lag series goes away; the other partitions stay OK
    const key = checkpointKey(fx.engine.keys, fx.log.identity.topicId, 0);
    const client = fx.store.clientForKey(key);
    const pos = (await client.hget(key, "pos"))!;
    const cut = pos.indexOf("|");
    await client.hset(key, "pos", `${Number(pos.slice(0, cut)) + 100}${pos.slice(cut)}`);
    await stack.status();
    const after = await series("qim_session_projection_partition_verdict");
    for (const v of PARTITION_VERDICTS) assert.equal(after.get(`partition=0,verdict=${v}`), v === "BEYOND_HIGH" ? 1 : 0, `partition 0 ${v}`);
    for (let p = 1; p < partitions; p++) assert.equal(after.get(`partition=${p},verdict=OK`), 1);
    const lagAfter = await series("qim_session_projection_checkpoint_lag");
    assert.equal(lagAfter.has("partition=0"), false, "no lag series while the checkpoint is unusable");
    assert.equal(lagAfter.size, partitions - 1);
    await stack.stop();
  });
});

describe("store reachability gauge (three instances)", () => {
  it("1 per instance that answers; the instance whose redis-server stopped goes to 0, the others stay 1", async () => {
    const topology = await startTopology("multi");
    const store = new RedisStore(topology.config, { onError: () => {} });
    try {
      const addrs = topology.servers.map((s) => s.addr);
      assert.deepEqual(await store.reachability(), [true, true, true]);
      let up = await series("qim_store_reachable");
      assert.deepEqual(Object.fromEntries(up), Object.fromEntries(addrs.map((addr, i) => [`addr=${addr},redis_instance=${i}`, 1])));
      await topology.servers[1]!.stop();
      assert.deepEqual(await store.reachability(), [true, false, true]);
      up = await series("qim_store_reachable");
      assert.deepEqual(Object.fromEntries(up), Object.fromEntries(addrs.map((addr, i) => [`addr=${addr},redis_instance=${i}`, i === 1 ? 0 : 1])));
    } finally {
      await store.close().catch(() => {});
      await topology.stop();
    }
  });
});
