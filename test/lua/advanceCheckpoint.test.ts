/**
 * lua/advanceCheckpoint-1.lua: compare-and-set of a partition checkpoint. The position moves
 * only from the one the caller read ("" = none); every write stores the log's identity and
 * updated_at. Returns {0, newPos} or {-9, currentPos ("" when none)} and then changes nothing.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { checkpointKey, KeySpace } from "../../core/index.js";
import { callScript, LUA_STATUS, luaStatus, type RedisClient } from "../../core/index.js";
import { dumpKeys } from "../harness/dump.js";
import { keyPrefix, useRedis } from "./helpers.js";

const fx = useRedis();

const NOW = 1_700_000_000_000;

interface Identity {
  clusterId: string;
  topicId: string;
  partitionCount: number;
}

const ID: Identity = { clusterId: "cluster-a", topicId: "topic-1", partitionCount: 8 };

function checkpoint(): { key: string; client: RedisClient } {
  const key = checkpointKey(new KeySpace(keyPrefix()), "dispatch", 3);
  return { key, client: fx.store.clientForKey(key) };
}

function advance(client: RedisClient, key: string, expected: string, to: string, now: number, id: Identity = ID): Promise<unknown[]> {
  // the partition's lease (same `{dNNN}` tag) is absent: these tests run without a cluster, token 0
  return callScript(client, "advanceCheckpoint", [key, key.replace(/:ckpt:.*$/, ":cluster:lease:partition")], [expected, to, id.clusterId, id.topicId, id.partitionCount, now, "", 0]);
}

test("advanceCheckpoint: the first write with expected \"\" stores pos, identity and updated_at", async () => {
  const { key, client } = checkpoint();
  const reply = await advance(client, key, "", "12|1700000000000-0", NOW);
  assert.deepEqual(reply, [LUA_STATUS.OK, "12|1700000000000-0"]);
  assert.equal(luaStatus(reply), "OK");
  assert.deepEqual(await client.hgetall(key), {
    pos: "12|1700000000000-0",
    cluster_id: "cluster-a",
    topic_id: "topic-1",
    partition_count: "8",
    updated_at: String(NOW),
  });
});

test("advanceCheckpoint: a CAS from the current pos moves it and rewrites identity and updated_at", async () => {
  const { key, client } = checkpoint();
  await advance(client, key, "", "12|1700000000000-0", NOW);
  assert.deepEqual(await advance(client, key, "12|1700000000000-0", "40|1700000000500-3", NOW + 1000), [0, "40|1700000000500-3"]);
  const next: Identity = { clusterId: "cluster-b", topicId: "topic-2", partitionCount: 16 };
  assert.deepEqual(await advance(client, key, "40|1700000000500-3", "41|1700000000600-0", NOW + 2000, next), [0, "41|1700000000600-0"]);
  assert.deepEqual(await client.hgetall(key), {
    pos: "41|1700000000600-0",
    cluster_id: "cluster-b",
    topic_id: "topic-2",
    partition_count: "16",
    updated_at: String(NOW + 2000),
  });
});

test("advanceCheckpoint: a CAS from a stale pos returns {-9, currentPos} and changes nothing", async () => {
  const { key, client } = checkpoint();
  await advance(client, key, "", "12|1700000000000-0", NOW);
  await advance(client, key, "12|1700000000000-0", "40|1700000000500-3", NOW + 1000);

  const before = await dumpKeys(client, [key]);
  const reply = await advance(client, key, "12|1700000000000-0", "13|1700000000001-0", NOW + 2000, { clusterId: "x", topicId: "y", partitionCount: 1 });
  assert.deepEqual(reply, [LUA_STATUS.CHECKPOINT_MOVED, "40|1700000000500-3"]);
  assert.equal(luaStatus(reply), "CHECKPOINT_MOVED");
  assert.equal(await dumpKeys(client, [key]), before);
});

test("advanceCheckpoint: expected \"\" when a checkpoint exists is refused and changes nothing", async () => {
  const { key, client } = checkpoint();
  await advance(client, key, "", "12|1700000000000-0", NOW);
  const before = await dumpKeys(client, [key]);
  assert.deepEqual(await advance(client, key, "", "1|1700000000000-0", NOW + 1000), [-9, "12|1700000000000-0"]);
  assert.equal(await dumpKeys(client, [key]), before);
});

test("advanceCheckpoint: a non-empty expected pos when there is no checkpoint returns {-9, \"\"} and writes nothing", async () => {
  const { key, client } = checkpoint();
  assert.deepEqual(await advance(client, key, "12|1700000000000-0", "40|1700000000500-3", NOW), [-9, ""]);
  assert.equal(await client.exists(key), 0);
});

test("advanceCheckpoint: fenced by the partition's lease (KEYS[2]): another owner, an older token or no token once leased answer -10 with the current pos and write nothing", async () => {
  const { key, client } = checkpoint();
  const lease = key.replace(/:ckpt:.*$/, ":cluster:lease:partition");
  await advance(client, key, "", "5|1700000000000-0", NOW);
  await client.hset(lease, "owner", "n1", "token", 4);
  const before = await client.hgetall(key);
  const fenced = (owner: string, token: number) =>
    callScript(client, "advanceCheckpoint", [key, lease], ["5|1700000000000-0", "9|1700000000001-0", ID.clusterId, ID.topicId, ID.partitionCount, NOW + 1, owner, token]);
  assert.deepEqual(await fenced("", 0), [LUA_STATUS.FENCED, "5|1700000000000-0"]);
  assert.deepEqual(await fenced("n1", 3), [LUA_STATUS.FENCED, "5|1700000000000-0"]);
  assert.deepEqual(await fenced("n2", 4), [LUA_STATUS.FENCED, "5|1700000000000-0"]);
  assert.equal(luaStatus(await fenced("n2", 4)), "FENCED");
  assert.deepEqual(await client.hgetall(key), before);
  assert.deepEqual(await fenced("n1", 4), [LUA_STATUS.OK, "9|1700000000001-0"]);
});
