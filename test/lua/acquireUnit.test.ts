/**
 * lua/cluster/acquireUnit-1.lua and releaseUnit-1.lua: compare-and-set of a unit's lease on the
 * owner and token the caller observed; every change of owner bumps the token by one.
 * Returns {0, newToken} or {-11, owner, token} and then writes nothing.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { callScript, KeySpace, LUA_STATUS, unitLeaseKey } from "../../core/index.js";
import { keyPrefix, useRedis } from "./helpers.js";

const fx = useRedis();

function lease() {
  const key = unitLeaseKey(new KeySpace(keyPrefix()), "relay", 17);
  const client = fx.store.clientForKey(key);
  return {
    key, client,
    acquire: (expectedOwner: string, expectedToken: number, owner: string) => callScript(client, "acquireUnit", [key], [expectedOwner, expectedToken, owner]),
    release: (owner: string, token: number) => callScript(client, "releaseUnit", [key], [owner, token]),
  };
}

test("acquireUnit: the first take of a unit with no lease gets token 1; the lease is on the unit's own tag", async () => {
  const l = lease();
  assert.match(l.key, /:\{b017\}:cluster:lease:relay$/);
  assert.deepEqual(await l.acquire("", 0, "n1"), [LUA_STATUS.OK, 1]);
  const h = await l.client.hgetall(l.key);
  assert.equal(h.owner, "n1");
  assert.equal(h.token, "1");
  assert.ok(Number(h.since) > 1_700_000_000_000);
});

test("acquireUnit: two nodes that observed the same owner: one wins, the other gets LEASE_MOVED and writes nothing", async () => {
  const l = lease();
  await l.acquire("", 0, "dead");
  assert.deepEqual(await l.acquire("dead", 1, "n1"), [LUA_STATUS.OK, 2]);
  const before = await l.client.hgetall(l.key);
  assert.deepEqual(await l.acquire("dead", 1, "n2"), [LUA_STATUS.LEASE_MOVED, "n1", 2]);
  assert.deepEqual(await l.client.hgetall(l.key), before);
  // a wrong token with the right owner is refused too
  assert.deepEqual(await l.acquire("n1", 1, "n2"), [LUA_STATUS.LEASE_MOVED, "n1", 2]);
});

test("releaseUnit: the holder releases (owner \"\", token bumped); anyone else, or a stale token, is refused", async () => {
  const l = lease();
  await l.acquire("", 0, "n1"); // token 1
  assert.deepEqual(await l.release("n2", 1), [LUA_STATUS.LEASE_MOVED, "n1", 1]);
  assert.deepEqual(await l.release("n1", 0), [LUA_STATUS.LEASE_MOVED, "n1", 1]);
  assert.deepEqual(await l.release("n1", 1), [LUA_STATUS.OK, 2]);
  assert.deepEqual([await l.client.hget(l.key, "owner"), await l.client.hget(l.key, "token")], ["", "2"]);
  // released: anyone takes it from ("", 2), and the token only grows
  assert.deepEqual(await l.acquire("", 2, "n2"), [LUA_STATUS.OK, 3]);
  assert.deepEqual(await l.release("n1", 2), [LUA_STATUS.LEASE_MOVED, "n2", 3]);
});
