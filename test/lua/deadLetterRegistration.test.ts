/**
 * lua/deadLetterRegistration-2.lua: moves exactly the given head of `ucs_pending` to the bucket's
 * dead-letter list and keeps only the newest ARGV[2] dead letters. Returns 1 when moved, else 0.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { encodeRegistration } from "../../core/index.js";
import { KeySpace } from "../../core/index.js";
import { callScript, type RedisClient } from "../../core/index.js";
import { dumpKeys } from "../harness/dump.js";
import { keyPrefix, useRedis } from "./helpers.js";
import { ucsDeadKey, userKeys } from "../../core/index.js";
import { newUuid } from "../../core/index.js";

const fx = useRedis();

function queue(): { key: string; dead: string; client: RedisClient; item: () => string } {
  const ks = new KeySpace(keyPrefix());
  const tenant = newUuid();
  const user = newUuid();
  const uk = userKeys(ks, tenant, user);
  const key = uk.ucsPending;
  const dead = ucsDeadKey(ks, uk.bucket);
  let t = 1_700_000_000_000;
  const item = () => encodeRegistration({ tenant, user: newUuid(), conversation: newUuid(), kind: "group", firstSeenAt: t++ });
  return { key, dead, client: fx.store.clientForKey(key), item };
}

async function move(client: RedisClient, key: string, dead: string, item: string, keep = 1000): Promise<number> {
  const reply = await callScript(client, "deadLetterRegistration", [key, dead], [item, keep]);
  assert.equal(reply.length, 1);
  return Number(reply[0]);
}

test("deadLetterRegistration: the head moves to the dead-letter list; the queue behind it is untouched", async () => {
  const { key, dead, client, item } = queue();
  const [b, c] = [item(), item()];
  await client.rpush(key, "garbage|not|an|item", b, c);
  assert.equal(await move(client, key, dead, "garbage|not|an|item"), 1);
  assert.deepEqual(await client.lrange(key, 0, -1), [b, c]);
  assert.deepEqual(await client.lrange(dead, 0, -1), ["garbage|not|an|item"]);
});

test("deadLetterRegistration: anything but the exact head changes nothing (another task moved or popped it first)", async () => {
  const { key, dead, client, item } = queue();
  const [a, b] = [item(), item()];
  await client.rpush(key, a, b);
  const before = await dumpKeys(client, [key, dead]);
  assert.equal(await move(client, key, dead, b), 0, "not the head");
  assert.equal(await move(client, key, dead, `${a} `), 0, "not exactly the head");
  assert.equal(await dumpKeys(client, [key, dead]), before);
  await client.del(key);
  assert.equal(await move(client, key, dead, a), 0, "empty queue");
  assert.equal(await client.exists(key, dead), 0);
});

test("deadLetterRegistration: only the newest ARGV[2] dead letters are kept", async () => {
  const { key, dead, client } = queue();
  const bad = Array.from({ length: 5 }, (_, i) => `bad-${i}`);
  await client.rpush(key, ...bad);
  for (const b of bad) assert.equal(await move(client, key, dead, b, 3), 1);
  assert.equal(await client.exists(key), 0);
  assert.deepEqual(await client.lrange(dead, 0, -1), ["bad-2", "bad-3", "bad-4"]);
});
