import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";
import { callScript } from "../../core/index.js";
import { useRedis } from "./helpers.js";

const fx = useRedis();

test("releaseLock: deletes the lock only for its holder", async () => {
  const key = `l${randomUUID().slice(0, 8)}:{g000}:drill:lock`;
  const client = fx.store.clientForKey(key);
  await client.set(key, "drill-a", "PX", 60_000, "NX");
  assert.deepEqual(await callScript(client, "releaseLock", [key], ["drill-b"]), [0]);
  assert.equal(await client.get(key), "drill-a", "another holder's lock stays");
  assert.deepEqual(await callScript(client, "releaseLock", [key], ["drill-a"]), [1]);
  assert.equal(await client.exists(key), 0);
  assert.deepEqual(await callScript(client, "releaseLock", [key], ["drill-a"]), [0], "a gone lock is not ours");
});
