/**
 * lua/raiseEpochMark-1.lua: sets a user's field of the bucket's epoch-mark hash to the epoch
 * when that is above the current mark (missing = 0); never lowers it. Returns the mark after
 * the call.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { KeySpace, type UserKeys } from "../../core/index.js";
import { callScript, pipelineScript, type RedisClient } from "../../core/index.js";
import { dumpKeys } from "../harness/dump.js";
import { keyPrefix, usersInOneBucket, useRedis } from "./helpers.js";
import { userKeys } from "../../core/index.js";
import { newUuid } from "../../core/index.js";
import type { Uuid } from "../../core/index.js";

const fx = useRedis();

function user(ks = new KeySpace(keyPrefix()), tenant: Uuid = newUuid(), id: Uuid = newUuid()): { k: UserKeys; client: RedisClient } {
  const k = userKeys(ks, tenant, id);
  return { k, client: fx.store.clientFor(k.tag) };
}

async function raise(client: RedisClient, k: UserKeys, epoch: number): Promise<number> {
  const reply = await callScript(client, "raiseEpochMark", [k.epochMarks], [k.ref, epoch]);
  assert.equal(reply.length, 1);
  return Number(reply[0]);
}

test("raiseEpochMark: sets the mark when missing", async () => {
  const { k, client } = user();
  assert.equal(await raise(client, k, 3), 3);
  assert.deepEqual(await client.hgetall(k.epochMarks), { [k.ref]: "3" });
});

test("raiseEpochMark: raises the mark (numerically, not as text)", async () => {
  const { k, client } = user();
  assert.equal(await raise(client, k, 9), 9);
  assert.equal(await raise(client, k, 10), 10);
  assert.equal(await client.hget(k.epochMarks, k.ref), "10");
  assert.equal(await raise(client, k, 123), 123);
  assert.equal(await client.hget(k.epochMarks, k.ref), "123");
});

test("raiseEpochMark: never lowers the mark; a lower or equal epoch returns the kept mark and changes nothing", async () => {
  const { k, client } = user();
  assert.equal(await raise(client, k, 5), 5);
  const before = await dumpKeys(client, [k.epochMarks]);
  assert.equal(await raise(client, k, 2), 5);
  assert.equal(await raise(client, k, 5), 5);
  assert.equal(await raise(client, k, 0), 5);
  assert.equal(await dumpKeys(client, [k.epochMarks]), before);
});

test("raiseEpochMark: epoch 0 with no mark returns 0 and writes nothing", async () => {
  const { k, client } = user();
  assert.equal(await raise(client, k, 0), 0);
  assert.equal(await client.exists(k.epochMarks), 0);
});

test("raiseEpochMark: only the user's own field of the bucket's hash moves", async () => {
  const ks = new KeySpace(keyPrefix());
  const tenant = newUuid();
  const [u1, u2] = usersInOneBucket(tenant, 2) as [Uuid, Uuid];
  const a = user(ks, tenant, u1);
  const b = user(ks, tenant, u2);
  assert.equal(a.k.epochMarks, b.k.epochMarks, "one epoch-mark hash for the bucket");
  assert.equal(await raise(a.client, a.k, 4), 4);
  assert.equal(await raise(b.client, b.k, 2), 2);
  assert.equal(await raise(a.client, a.k, 1), 4);
  assert.equal(await raise(b.client, b.k, 7), 7);
  assert.deepEqual(await a.client.hgetall(a.k.epochMarks), { [a.k.ref]: "4", [b.k.ref]: "7" });
});

test("raiseEpochMark: in a MULTI through pipelineScript, as the session rebuild calls it", async () => {
  const { k, client } = user();
  await raise(client, k, 6);
  const p = client.multi();
  pipelineScript(p, "raiseEpochMark", [k.epochMarks], [k.ref, 3]);
  pipelineScript(p, "raiseEpochMark", [k.epochMarks], [k.ref, 8]);
  const res = await p.exec();
  assert.deepEqual(res, [
    [null, 6],
    [null, 8],
  ]);
  assert.equal(await client.hget(k.epochMarks, k.ref), "8");
});
