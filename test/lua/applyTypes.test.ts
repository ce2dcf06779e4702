/**
 * lua/registry/applyTypes-1.lua called raw: puts and deletes land with one version step; a
 * re-apply of what is stored changes nothing and keeps the version; a stale expected version and
 * a change past the type cap write nothing.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { callScript, KeySpace } from "../../core/index.js";
import { keyPrefix, useRedis } from "./helpers.js";

const fx = useRedis();

test("applyTypes: one version step per change, idempotent re-apply, compare-and-set and the cap refuse with nothing written", async () => {
  const ks = new KeySpace(keyPrefix());
  const key = ks.key("{b007}", "typereg", "t");
  const c = fx.store.clientFor("{b007}");
  const apply = (expect: string | number, max: number, ...pairs: string[]) => callScript(c, "applyTypes", [key], [expect, max, ...pairs]);

  // first change: two puts, from version 0 (absent) to 1
  assert.deepEqual(await apply(0, 3, "a.x", "{\"A\":1}", "b.y", "{\"B\":1}"), [0, 1, 1, 2]);
  assert.deepEqual(await c.hgetall(key), { v: "1", "t:a.x": "{\"A\":1}", "t:b.y": "{\"B\":1}" });
  // the same again: nothing changes, the version stays
  assert.deepEqual(await apply(1, 3, "a.x", "{\"A\":1}", "b.y", "{\"B\":1}"), [0, 1, 0, 2]);
  // a delete of an absent type alone changes nothing either
  assert.deepEqual(await apply("", 3, "zz.none", ""), [0, 1, 0, 2]);
  // a stale expected version: refused with the current one, nothing written
  assert.deepEqual(await apply(0, 3, "a.x", "{\"A\":2}"), [-18, 1]);
  assert.equal(await c.hget(key, "t:a.x"), "{\"A\":1}");
  // past the cap (3): two creates on top of two types; nothing written
  assert.deepEqual(await apply(1, 3, "c.z", "{}", "d.w", "{}"), [-19, 4]);
  assert.equal(await c.hlen(key), 3);
  // an update, a delete and a create in one step: version 2, count stays 2
  assert.deepEqual(await apply(1, 3, "a.x", "{\"A\":2}", "b.y", "", "c.z", "{\"C\":1}"), [0, 2, 1, 2]);
  assert.deepEqual(await c.hgetall(key), { v: "2", "t:a.x": "{\"A\":2}", "t:c.z": "{\"C\":1}" });
  // a malformed argument list is an error reply, nothing written
  await assert.rejects(apply(2, 3, "a.x"), /ARGV is expected version/);
  assert.equal(await c.hget(key, "v"), "2");
});
