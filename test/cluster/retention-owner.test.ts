/**
 * Retention's trimming task runs per relay bucket at the bucket's lease holder (issue 26): two
 * engine nodes on one real redis-server split the buckets; each node's round trims the groups of
 * its own buckets only, and a node asked to trim a group of the other's bucket does nothing. Who
 * owns a bucket is read from its lease in Redis, not from the nodes.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, before, describe, it } from "node:test";
import {
  EngineRuntime, KeySpace, RedisHashAuthority, RedisStore, conversationKeys, newUuid, unitLeaseKey, COMMIT_BUCKET_COUNT, type Uuid,
} from "../../core/index.js";
import { startRedis, type RedisServer } from "../harness/redis.js";

describe("retention trims at the relay bucket's owner only", () => {
  let redis: RedisServer;
  let store: RedisStore;
  const nodes: EngineRuntime[] = [];
  const keyPrefix = `ro${randomUUID().slice(0, 8)}`;
  const keys = new KeySpace(keyPrefix);

  const node = (nodeId: string) => new EngineRuntime({
    store, keyPrefix,
    dispatch: { clusterId: "test", topicId: "dispatch", partitionCount: 4 },
    authority: new RedisHashAuthority(store, keys),
    projection: { background: false },
    relayIntervalMs: 0,
    conversationList: { compactor: { background: false } },
    unreadAudit: { intervalMs: 0 },
    retention: { intervalMs: 0 },
    cluster: { nodeId, address: "", version: "test", leaseTtlMs: 60_000, heartbeatIntervalMs: 30_000 },
  });

  before(async () => {
    redis = await startRedis();
    store = new RedisStore({ kind: "instances", addrs: [redis.addr] });
  });
  after(async () => {
    for (const n of nodes.reverse()) await n.stop();
    await store?.close();
    await redis?.stop();
  });

  const leaseOwner = async (bucket: number) => {
    const key = unitLeaseKey(keys, "relay", bucket);
    return (await store.clientForKey(key).hget(key, "owner")) ?? "";
  };
  const histSeqs = async (tenant: Uuid, group: Uuid) => {
    const k = conversationKeys(keys, tenant, group);
    return (await store.clientFor(k.tag).zrange(k.hist, "0", "-1", "WITHSCORES")).filter((_, i) => i % 2 === 1).map(Number);
  };

  it("each node's round trims its own buckets' groups; the other's are left alone", async () => {
    const a = node("a");
    const b = node("b");
    nodes.push(a, b);
    await a.start();
    await b.start();
    await a.cluster!.tick();
    await b.cluster!.tick();
    await a.cluster!.tick();
    const owners = await Promise.all(Array.from({ length: COMMIT_BUCKET_COUNT }, (_, i) => leaseOwner(i)));
    const ofA = owners.filter((o) => o === "a").length;
    assert.ok(ofA > 0 && ofA < COMMIT_BUCKET_COUNT, `the buckets are split (a holds ${ofA})`);

    // one group on a bucket a holds, one on a bucket b holds
    const tenant = newUuid();
    const [owner, user] = [newUuid(), newUuid()];
    const found: Record<string, Uuid> = {};
    for (let i = 0; i < 64 && !(found.a && found.b); i++) {
      const { group } = await a.conversations.createGroup({ tenant, owner, members: [user] });
      const o = owners[conversationKeys(keys, tenant, group).bucket]!;
      found[o] ??= group;
    }
    const gA = found.a!;
    const gB = found.b!;
    assert.ok(gA && gB);
    for (let i = 1; i <= 10; i++) {
      await a.conversations.send({ tenant, group: gA, sender: owner, text: `a${i}` });
      await b.conversations.send({ tenant, group: gB, sender: owner, text: `b${i}` });
    }
    for (const n of nodes) await n.relay.drainAll();
    await a.retention.policies.setTenantClass(tenant, "standard", { maxAgeMs: 0, maxCount: 3 }, true);

    // keep the last 3 of 10: seqs 8..10
    const ra = await a.retention.runRound({ tenant });
    assert.equal(ra.bucketsOwned, ofA);
    assert.deepEqual(await histSeqs(tenant, gA), [8, 9, 10]);
    assert.deepEqual(await histSeqs(tenant, gB), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    // asked for a group of b's bucket, a does nothing
    assert.equal(await a.retention.trimConversation(tenant, gB), null);
    assert.equal((await histSeqs(tenant, gB)).length, 10);

    const rb = await b.retention.runRound({ tenant });
    assert.equal(rb.bucketsOwned, COMMIT_BUCKET_COUNT - ofA);
    assert.deepEqual(await histSeqs(tenant, gB), [8, 9, 10]);
    assert.equal(rb.histRemoved, 7);
  });
});
