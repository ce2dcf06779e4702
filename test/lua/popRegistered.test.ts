/**
 * lua/popRegistered-1.lua: pops exactly the heads of `ucs_pending` equal to the given items, in
 * order, and stops at the first difference. Returns the number popped.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { encodeRegistration } from "../../core/index.js";
import { KeySpace, unitLeaseKey } from "../../core/index.js";
import { callScript, type RedisClient } from "../../core/index.js";
import { dumpKeys } from "../harness/dump.js";
import { keyPrefix, useRedis } from "./helpers.js";
import { userKeys } from "../../core/index.js";
import { newUuid } from "../../core/index.js";

const fx = useRedis();

/** The slot lease beside a pending queue (same `{uNNN}` tag); absent here: these tests run without a cluster. */
function leaseOf(pendingKey: string): string {
  const m = /^([^:]+):\{u(\d{3})\}:/.exec(pendingKey)!;
  return unitLeaseKey(new KeySpace(m[1]!), "slot", Number(m[2]));
}

/** A user bucket's pending queue under a fresh prefix, and a maker of distinct real items. */
function queue(): { key: string; client: RedisClient; item: () => string } {
  const ks = new KeySpace(keyPrefix());
  const tenant = newUuid();
  const key = userKeys(ks, tenant, newUuid()).ucsPending;
  let t = 1_700_000_000_000;
  const item = () => encodeRegistration({ tenant, user: newUuid(), conversation: newUuid(), kind: "group", firstSeenAt: t++ });
  return { key, client: fx.store.clientForKey(key), item };
}

async function pop(client: RedisClient, key: string, items: string[]): Promise<number> {
  const reply = await callScript(client, "popRegistered", [key, leaseOf(key)], ["", 0, ...items]);
  assert.equal(reply.length, 1);
  return Number(reply[0]);
}

test("popRegistered: pops exactly the heads equal to the items, in order", async () => {
  const { key, client, item } = queue();
  const [a, b, c, d] = [item(), item(), item(), item()];
  await client.rpush(key, a, b, c, d);
  assert.equal(await pop(client, key, [a, b]), 2);
  assert.deepEqual(await client.lrange(key, 0, -1), [c, d]);
  assert.equal(await pop(client, key, [c, d]), 2);
  assert.equal(await client.exists(key), 0);
});

test("popRegistered: stops at the first difference (only the equal prefix is popped)", async () => {
  const { key, client, item } = queue();
  const [a, b, c, d, x] = [item(), item(), item(), item(), item()];
  await client.rpush(key, a, b, c, d);
  assert.equal(await pop(client, key, [a, x, c]), 1);
  assert.deepEqual(await client.lrange(key, 0, -1), [b, c, d]);

  // the head itself differs: nothing popped, nothing changed
  const before = await dumpKeys(client, [key]);
  assert.equal(await pop(client, key, [c, d]), 0);
  assert.equal(await pop(client, key, [x]), 0);
  assert.equal(await dumpKeys(client, [key]), before);
});

test("popRegistered: an empty queue pops nothing; items beyond the queue's end are not an error", async () => {
  const { key, client, item } = queue();
  const [a, b, c] = [item(), item(), item()];
  assert.equal(await pop(client, key, [a, b]), 0);
  assert.equal(await client.exists(key), 0);

  await client.rpush(key, a, b);
  assert.equal(await pop(client, key, []), 0);
  assert.deepEqual(await client.lrange(key, 0, -1), [a, b]);
  assert.equal(await pop(client, key, [a, b, c]), 2);
  assert.equal(await client.exists(key), 0);
});

test("popRegistered: two tasks that read the same heads: the second pops nothing though newer items are queued", async () => {
  const { key, client, item } = queue();
  const [a, b, c, d] = [item(), item(), item(), item()];
  await client.rpush(key, a, b);
  const task1 = await client.lrange(key, 0, 9);
  const task2 = await client.lrange(key, 0, 9);
  assert.deepEqual(task1, [a, b]);
  assert.deepEqual(task2, [a, b]);
  await client.rpush(key, c, d); // registered while both tasks write to the authority

  assert.equal(await pop(client, key, task1), 2);
  assert.deepEqual(await client.lrange(key, 0, -1), [c, d]);
  const before = await dumpKeys(client, [key]);
  assert.equal(await pop(client, key, task2), 0);
  assert.equal(await dumpKeys(client, [key]), before);
});

test("popRegistered: a task whose batch is a longer read of the same queue pops nothing once another popped the prefix", async () => {
  const { key, client, item } = queue();
  const [a, b, c] = [item(), item(), item()];
  await client.rpush(key, a, b);
  const short = await client.lrange(key, 0, 9);
  await client.rpush(key, c);
  const long = await client.lrange(key, 0, 9);
  assert.deepEqual(long, [a, b, c]);

  assert.equal(await pop(client, key, short), 2);
  // c is at the head now, but the long batch starts with a: c stays for the next pass
  assert.equal(await pop(client, key, long), 0);
  assert.deepEqual(await client.lrange(key, 0, -1), [c]);
});

test("popRegistered: duplicates in the queue are popped one per given item, in order", async () => {
  const { key, client, item } = queue();
  const [a, b] = [item(), item()];
  await client.rpush(key, a, a, b, a);
  assert.equal(await pop(client, key, [a]), 1);
  assert.deepEqual(await client.lrange(key, 0, -1), [a, b, a]);

  // [a, a]: the first a is popped, then the head is b: stop
  assert.equal(await pop(client, key, [a, a]), 1);
  assert.deepEqual(await client.lrange(key, 0, -1), [b, a]);

  await client.del(key);
  await client.rpush(key, a, a, b, a);
  assert.equal(await pop(client, key, [a, a, b]), 3);
  assert.deepEqual(await client.lrange(key, 0, -1), [a]);
});

test("popRegistered: fenced by the user slot's lease (KEYS[2]): only its exact owner and token pop; anything else answers -10 and pops nothing", async () => {
  const { key, client, item } = queue();
  const [a, b] = [item(), item()];
  await client.rpush(key, a, b);
  await client.hset(leaseOf(key), "owner", "n1", "token", 2);
  const popWith = async (owner: string, token: number) => Number((await callScript(client, "popRegistered", [key, leaseOf(key)], [owner, token, a, b]))[0]);
  assert.equal(await popWith("", 0), -10);
  assert.equal(await popWith("n1", 1), -10);
  assert.equal(await popWith("n2", 2), -10);
  assert.deepEqual(await client.lrange(key, 0, -1), [a, b]);
  assert.equal(await popWith("n1", 2), 2);
  assert.equal(await client.exists(key), 0);
});
