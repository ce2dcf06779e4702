import { test } from "node:test";
import assert from "node:assert/strict";
import { callScript, newUuid } from "../../core/index.js";
import { useRedis } from "./helpers.js";

const fx = useRedis();

test("advanceListCheckpoint: compare-and-set from none, then from the stored value only", async () => {
  const key = `al:{d001}:clckpt:${newUuid()}`;
  const client = fx.store.clientFor("{d001}");
  assert.deepEqual(await callScript(client, "advanceListCheckpoint", [key], ["", "3|1-0"]), [1]);
  assert.deepEqual(await callScript(client, "advanceListCheckpoint", [key], ["", "4|2-0"]), [0]);
  assert.deepEqual(await callScript(client, "advanceListCheckpoint", [key], ["3|1-0", "5|3-0"]), [1]);
  assert.equal(await client.get(key), "5|3-0");
});
