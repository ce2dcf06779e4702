/** lua/cmd-sync/raiseCmdFlushPoint-2.lua: fenced by the slot's lease, never lowered. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { callScript, KeySpace, unitLeaseKey } from "../../core/index.js";
import { keyPrefix, useRedis } from "./helpers.js";

const fx = useRedis();

test("raiseCmdFlushPoint: raises only, and only for the lease's owner and token", async () => {
  const ks = new KeySpace(keyPrefix());
  const key = ks.key("{u009}", "cmdflushpt");
  const lease = unitLeaseKey(ks, "slot", 9);
  const client = fx.store.clientFor("{u009}");
  assert.deepEqual(await callScript(client, "raiseCmdFlushPoint", [key, lease], ["", 0, 100]), [0, 100], "no lease: token 0 writes");
  assert.deepEqual(await callScript(client, "raiseCmdFlushPoint", [key, lease], ["", 0, 50]), [0, 100], "never lowered");
  await client.hset(lease, "owner", "n1", "token", 3);
  assert.deepEqual(await callScript(client, "raiseCmdFlushPoint", [key, lease], ["", 0, 200]), [-10]);
  assert.deepEqual(await callScript(client, "raiseCmdFlushPoint", [key, lease], ["n2", 3, 200]), [-10]);
  assert.deepEqual(await callScript(client, "raiseCmdFlushPoint", [key, lease], ["n1", 2, 200]), [-10]);
  assert.equal(await client.get(key), "100");
  assert.deepEqual(await callScript(client, "raiseCmdFlushPoint", [key, lease], ["n1", 3, 200]), [0, 200]);
});
