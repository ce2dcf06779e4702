/**
 * lua/tokens/revokeDevice-3.lua called raw: the device's mark holds the revocation time, kept for
 * the longest token life, never moved back; only that device's tokens leave the list.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { callScript, KeySpace } from "../../core/index.js";
import { keyPrefix, useRedis } from "./helpers.js";

const fx = useRedis();
const NOW = Date.now();
const TTL_MAX = 3_600_000;

test("revokeDevice: marks the device at now for TTL_MAX, removes its tokens only, never moves the mark back", async () => {
  const ks = new KeySpace(keyPrefix());
  const k = { tokens: ks.key("{u011}", "tokens", "t:u"), meta: ks.key("{u011}", "tokmeta", "t:u"), dev: ks.key("{u011}", "tokdevrev", "t:u:phone") };
  const c = fx.store.clientFor("{u011}");
  await c.zadd(k.tokens, NOW + 10, "a", NOW + 20, "b", NOW + 30, "c");
  await c.hset(k.meta, "a", `phone|1|${NOW + 10}|k1`, "b", `phone-2|1|${NOW + 20}|k1`, "c", `phone|2|${NOW + 30}|k2`);
  const r = await callScript(c, "revokeDevice", [k.tokens, k.meta, k.dev], [NOW, "phone", TTL_MAX]) as unknown[];
  assert.deepEqual(r.slice(0, 2), [0, NOW]);
  const removed = new Map<string, string>();
  for (let i = 2; i < r.length; i += 2) removed.set(String(r[i]), String(r[i + 1]));
  assert.deepEqual([...removed.keys()].sort(), ["a", "c"], "phone-2 shares a prefix, not the device");
  assert.equal(removed.get("c"), `phone|2|${NOW + 30}|k2`);
  assert.deepEqual(await c.zrange(k.tokens, "0", "-1"), ["b"]);
  assert.equal(await c.get(k.dev), String(NOW));
  assert.equal(await c.pexpiretime(k.dev), NOW + TTL_MAX);
  // an earlier clock does not move the mark back
  assert.deepEqual(await callScript(c, "revokeDevice", [k.tokens, k.meta, k.dev], [NOW - 500, "phone", TTL_MAX]), [0, NOW]);
  assert.equal(await c.get(k.dev), String(NOW));
});
