/**
 * lua/delivery/advanceDeliveryCheckpoint-2.lua: the delivery consumer's checkpoint of a dispatch
 * partition moves only from the position the caller started from, and only while the partition's
 * lease names the caller (owner and token). Expected replies and values are written out by hand.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { callScript, deliveryCheckpointKey, KeySpace, LUA_STATUS, unitLeaseKey, type RedisClient } from "../../core/index.js";
import { dumpKeys } from "../harness/dump.js";
import { keyPrefix, useRedis } from "./helpers.js";

const fx = useRedis();

function keys(): { key: string; lease: string; client: RedisClient } {
  const space = new KeySpace(keyPrefix());
  const key = deliveryCheckpointKey(space, "dispatch", 3);
  return { key, lease: unitLeaseKey(space, "partition", 3), client: fx.store.clientForKey(key) };
}

const advance = (client: RedisClient, k: { key: string; lease: string }, expected: string, to: string, owner = "", token = 0) =>
  callScript(client, "advanceDeliveryCheckpoint", [k.key, k.lease], [expected, to, owner, token]);

test("advanceDeliveryCheckpoint: from none (\"\") and then from the stored position it moves; from a stale one {-9, current} and nothing changes", async () => {
  const k = keys();
  assert.deepEqual(await advance(k.client, k, "", "12|1700000000000-0"), [LUA_STATUS.OK, "12|1700000000000-0"]);
  assert.deepEqual(await advance(k.client, k, "12|1700000000000-0", "40|1700000000500-3"), [LUA_STATUS.OK, "40|1700000000500-3"]);
  assert.equal(await k.client.get(k.key), "40|1700000000500-3");
  const before = await dumpKeys(k.client, [k.key]);
  // a consumer that started from 12 and pushed up to 20 must not move it back from 40
  assert.deepEqual(await advance(k.client, k, "12|1700000000000-0", "20|1700000000100-0"), [LUA_STATUS.CHECKPOINT_MOVED, "40|1700000000500-3"]);
  assert.deepEqual(await advance(k.client, k, "", "1|1700000000000-0"), [-9, "40|1700000000500-3"]);
  assert.equal(await dumpKeys(k.client, [k.key]), before);
});

test("advanceDeliveryCheckpoint: fenced by the partition's lease — another owner, an older token, or no token once leased answer {-10, current} and write nothing; the holder moves it", async () => {
  const k = keys();
  await advance(k.client, k, "", "5|1700000000000-0");
  await k.client.hset(k.lease, "owner", "n1", "token", 4);
  const before = await dumpKeys(k.client, [k.key]);
  for (const [owner, token] of [["", 0], ["n1", 3], ["n2", 4], ["n2", 5]] as const) {
    assert.deepEqual(await advance(k.client, k, "5|1700000000000-0", "9|1700000000001-0", owner, token), [LUA_STATUS.FENCED, "5|1700000000000-0"], `${owner}/${token}`);
  }
  assert.equal(await dumpKeys(k.client, [k.key]), before);
  assert.deepEqual(await advance(k.client, k, "5|1700000000000-0", "9|1700000000001-0", "n1", 4), [LUA_STATUS.OK, "9|1700000000001-0"]);
  assert.equal(await k.client.get(k.key), "9|1700000000001-0");
});
