/**
 * lua/tokens/revokeToken-3.lua called raw: the mark expires with the token, the token leaves the
 * user's list, a second call says it already was revoked, an expired token leaves no mark.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { callScript, KeySpace } from "../../core/index.js";
import { keyPrefix, useRedis } from "./helpers.js";

const fx = useRedis();
const T = Date.now() + 3_600_000;

test("revokeToken: marks until the token's expiry, idempotent, nothing kept for an expired token", async () => {
  const ks = new KeySpace(keyPrefix());
  const k = { tokens: ks.key("{u009}", "tokens", "t:u"), meta: ks.key("{u009}", "tokmeta", "t:u") };
  const rev = (id: string) => ks.key("{u009}", "tokrev", `t:u:${id}`);
  const c = fx.store.clientFor("{u009}");
  await c.zadd(k.tokens, T, "a", T + 1, "b");
  await c.hset(k.meta, "a", `phone|1|${T}|k1`, "b", `tab|1|${T + 1}|k1`);
  assert.deepEqual(await callScript(c, "revokeToken", [k.tokens, k.meta, rev("a")], [1000, "a", T]), [0, 1]);
  assert.equal(await c.get(rev("a")), "1");
  assert.equal(await c.pexpiretime(rev("a")), T);
  assert.deepEqual(await c.zrange(k.tokens, "0", "-1"), ["b"]);
  assert.deepEqual(await c.hkeys(k.meta), ["b"]);
  assert.deepEqual(await callScript(c, "revokeToken", [k.tokens, k.meta, rev("a")], [1001, "a", T]), [0, 0], "a re-run");
  // an expired token: taken off the list, no mark
  assert.deepEqual(await callScript(c, "revokeToken", [k.tokens, k.meta, rev("b")], [T + 2, "b", T + 1]), [0, 0]);
  assert.equal(await c.exists(rev("b")), 0);
  assert.deepEqual(await c.zrange(k.tokens, "0", "-1"), []);
});
