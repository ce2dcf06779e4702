/** lua/cmd-sync/scanCmdRecent-1.lua: a page from a min score (inclusive), with the instance's TIME read in the same step. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { callScript, KeySpace } from "../../core/index.js";
import { keyPrefix, useRedis } from "./helpers.js";

const fx = useRedis();

test("scanCmdRecent: entries from the min score in order, at most the limit, after the instance's time", async () => {
  const key = new KeySpace(keyPrefix()).key("{b007}", "cmdrecent");
  const client = fx.store.clientFor("{b007}");
  await client.zadd(key, 10, "a", 20, "c", 20, "b", 30, "d");
  const [secs] = await client.time();
  const r = await callScript(client, "scanCmdRecent", [key], [20, 2]);
  assert.ok(Math.abs(Number(r[0]) - Number(secs) * 1000) < 60_000);
  assert.deepEqual(r.slice(1), ["b", "20", "c", "20"]);
  assert.deepEqual((await callScript(client, "scanCmdRecent", [key], [31, 5])).slice(1), []);
});
