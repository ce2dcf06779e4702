/**
 * lua/tokens/recordToken-2.lua called raw: a token enters its user's list and meta hash, both keys
 * expire with the latest token, expired entries are dropped on the next issue, and a full list
 * refuses without writing. Expected values by hand from the arguments.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { callScript, KeySpace } from "../../core/index.js";
import { dumpKeys } from "../harness/dump.js";
import { keyPrefix, useRedis } from "./helpers.js";

const fx = useRedis();

function keys() {
  const ks = new KeySpace(keyPrefix());
  return { tokens: ks.key("{u007}", "tokens", "t:u"), meta: ks.key("{u007}", "tokmeta", "t:u") };
}

// far in the future so that Redis keeps the keys (PEXPIREAT is on Redis's clock)
const T = Date.now() + 3_600_000;

test("recordToken: adds, expires both keys with the latest token, drops expired entries, refuses when full", async () => {
  const k = keys();
  const c = fx.store.clientFor("{u007}");
  const rec = (now: number, id: string, exp: number, max = 3) => callScript(c, "recordToken", [k.tokens, k.meta], [now, id, exp, `phone|${now}|${exp}|k1`, max]);
  assert.deepEqual(await rec(1000, "a", T + 10), [0, 1]);
  assert.deepEqual(await rec(1001, "b", T + 5), [0, 2]);
  assert.deepEqual(await c.zrange(k.tokens, "0", "-1", "WITHSCORES"), ["b", String(T + 5), "a", String(T + 10)]);
  assert.equal(await c.hget(k.meta, "a"), `phone|1000|${T + 10}|k1`);
  assert.equal(await c.pexpiretime(k.tokens), T + 10);
  assert.equal(await c.pexpiretime(k.meta), T + 10);
  assert.deepEqual(await rec(1002, "c", T + 20), [0, 3]);
  assert.equal(await c.pexpiretime(k.tokens), T + 20);
  // full: nothing written
  const before = await dumpKeys(c, [k.tokens, k.meta]);
  assert.deepEqual(await rec(1003, "d", T + 30), [-17, 3]);
  assert.equal(await dumpKeys(c, [k.tokens, k.meta]), before);
  // at "now" = T + 5, b is expired: dropped, and d fits
  assert.deepEqual(await rec(T + 5, "d", T + 30), [0, 3]);
  assert.deepEqual(await c.zrange(k.tokens, "0", "-1"), ["a", "c", "d"]);
  assert.deepEqual((await c.hkeys(k.meta)).sort(), ["a", "c", "d"]);
});
