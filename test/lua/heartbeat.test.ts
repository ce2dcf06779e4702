/**
 * lua/cluster/heartbeat-3.lua: records a node's heartbeat at Redis's TIME and returns the
 * registry {now, id, record, drainedAt, units, …}; a node's first heartbeat clears its draining
 * flag; the kinds of units a node takes are kept beside it ("" : every kind, no field); nodes
 * silent past forgetAfterMs are dropped. nodeId "" only reads.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { callScript, drainingKey, KeySpace, nodesKey, unitsKey } from "../../core/index.js";
import { keyPrefix, useRedis } from "./helpers.js";

const fx = useRedis();

function registry() {
  const ks = new KeySpace(keyPrefix());
  const keys = [nodesKey(ks), drainingKey(ks), unitsKey(ks)];
  const client = fx.store.clientForKey(keys[0]!);
  const beat = (id: string, fresh: boolean, forget = 60_000, address = "127.0.0.1:9000", units = "") =>
    callScript(client, "heartbeat", keys, [id, address, "0.1.0", 1234, fresh ? "1" : "0", forget, units]);
  return { keys, client, beat };
}

async function redisNowMs(client: { time(): Promise<[string, string]> }): Promise<number> {
  const [s, us] = await client.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}

test("heartbeat: stamps the record with Redis's TIME and returns every node with that time", async () => {
  const { keys, client, beat } = registry();
  const before = await redisNowMs(client as never);
  const r1 = await beat("n1", true);
  const after = await redisNowMs(client as never);
  const now = Number(r1[0]);
  assert.ok(now >= before && now <= after, "the script's clock is Redis's");
  assert.deepEqual(r1.slice(1), ["n1", `127.0.0.1:9000|0.1.0|1234|${now}`, "", ""]);
  await beat("n2", true, 60_000, "");
  const r2 = await beat("", false);
  const ids = [];
  for (let i = 1; i < r2.length; i += 4) ids.push(r2[i]);
  assert.deepEqual(ids.sort(), ["n1", "n2"]);
  assert.equal(await client.hlen(keys[0]!), 2, "a read (nodeId \"\") writes no record");
});

test("heartbeat: a draining flag shows in the reply; a later beat keeps it, a node's first beat (fresh) clears it", async () => {
  const { keys, client, beat } = registry();
  await beat("n1", true);
  await client.hset(keys[1]!, "n1", "777");
  assert.equal((await beat("n1", false))[3], "777");
  assert.equal((await beat("n1", true))[3], "");
  assert.equal(await client.hexists(keys[1]!, "n1"), 0);
});

test("heartbeat: a node silent past forgetAfterMs is dropped with its draining flag; a fresh one stays", async () => {
  const { keys, client, beat } = registry();
  const old = (await redisNowMs(client as never)) - 10_000;
  await client.hset(keys[0]!, "gone", `a|v|1|${old}`);
  await client.hset(keys[1]!, "gone", "1");
  await client.hset(keys[2]!, "gone", "relay");
  const r = await beat("n1", true, 5000);
  assert.deepEqual(r.slice(1).filter((_, i) => i % 4 === 0), ["n1"]);
  assert.equal(await client.hexists(keys[0]!, "gone"), 0);
  assert.equal(await client.hexists(keys[1]!, "gone"), 0);
  assert.equal(await client.hexists(keys[2]!, "gone"), 0);
});

test("heartbeat: the kinds a node takes are kept beside it and returned; \"\" (every kind) removes the field, a read changes nothing", async () => {
  const { keys, client, beat } = registry();
  const r1 = await beat("api", true, 60_000, "127.0.0.1:9001", "relay");
  assert.equal(r1[4], "relay");
  assert.equal(await client.hget(keys[2]!, "api"), "relay");
  await beat("worker", true, 60_000, "127.0.0.1:9002", "partition,slot");
  const r2 = await beat("", false);
  const byNode = new Map<string, string>();
  for (let i = 1; i < r2.length; i += 4) byNode.set(String(r2[i]), String(r2[i + 3]));
  assert.deepEqual(Object.fromEntries(byNode), { api: "relay", worker: "partition,slot" });
  await beat("api", false, 60_000, "127.0.0.1:9001", "");
  assert.equal(await client.hexists(keys[2]!, "api"), 0, "every kind again: no field");
  assert.equal(await client.hget(keys[2]!, "worker"), "partition,slot");
});
