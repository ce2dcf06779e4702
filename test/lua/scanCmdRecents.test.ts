/** lua/cmd-sync/scanCmdRecents-n.lua: scanCmdRecent-1.lua over many buckets in one call, one clock read. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { callScript, KeySpace } from "../../core/index.js";
import { keyPrefix, useRedis } from "./helpers.js";

const fx = useRedis();

test("scanCmdRecents: each bucket's page from its own min score and limit, counted, in KEYS order, after the instance's time", async () => {
  const space = new KeySpace(keyPrefix());
  const [k1, k2, k3] = ["{b001}", "{b002}", "{b003}"].map((t) => space.key(t, "cmdrecent"));
  const client = fx.store.clientFor("{b001}");
  await client.zadd(k1!, 10, "a", 20, "c", 20, "b", 30, "d");
  await client.zadd(k3!, 5, "x");
  const [secs] = await client.time();
  // by hand: k1 from 20 with limit 2 -> b, c (score then member order); k2 is empty; k3 from 6 -> nothing
  const r = await callScript(client, "scanCmdRecents", [k1!, k2!, k3!], [20, 2, 0, 10, 6, 10]);
  assert.ok(Math.abs(Number(r[0]) - Number(secs) * 1000) < 60_000);
  assert.deepEqual(r.slice(1).map(String), ["2", "b", "20", "c", "20", "0", "0"]);
  // the same pages as one scanCmdRecent call per bucket
  for (const [key, min, limit] of [[k1!, 20, 2], [k2!, 0, 10], [k3!, 6, 10], [k3!, 5, 10]] as const) {
    const single = (await callScript(client, "scanCmdRecent", [key], [min, limit])).slice(1).map(String);
    const many = (await callScript(client, "scanCmdRecents", [key], [min, limit])).slice(1).map(String);
    assert.deepEqual(many, [String(single.length / 2), ...single]);
  }
});
