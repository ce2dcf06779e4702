import { test } from "node:test";
import assert from "node:assert/strict";
import { callScript, newUuid, uuidToHex } from "../../core/index.js";
import { useRedis } from "./helpers.js";

const fx = useRedis();

function keys() {
  const id = uuidToHex(newUuid());
  return [`lv:{u002}:badge:${id}`, `lv:{u002}:version:${id}`, `lv:{u002}:rows:${id}`, `lv:{u002}:prefs:${id}`] as const;
}

test("readLiveView: the badge, the version read or drawn, the named rows and the held rows' prefs, in order, absent ones as nil", async () => {
  const client = fx.store.clientFor("{u002}");
  const k = keys();
  const run = (args: (string | number)[]) => callScript(client, "readLiveView", [...k], args);
  // nothing stored: an empty badge, version 0 (read: nothing written), nils
  assert.deepEqual(await run([0, 2, "c1", "c2", "c3"]), [[], 0, [null, null], [null]]);
  assert.equal(await client.exists(k[1]), 0, "a read does not create the counter");
  await client.hset(k[0], "total_unread", "4", "total_mention", "1", "muted_unread", "0");
  await client.hset(k[2], "c1", "row-1", "c3", "row-3");
  await client.hset(k[3], "c2", "prefs-2");
  await client.set(k[1], "7");
  // drawn: INCR from 7; rows c3, c1, c2 in the order asked; prefs of c2 and c9
  const r = await run([1, 3, "c3", "c1", "c2", "c2", "c9"]);
  assert.deepEqual(r, [["total_unread", "4", "total_mention", "1", "muted_unread", "0"], 8, ["row-3", "row-1", null], ["prefs-2", null]]);
  assert.equal(await client.get(k[1]), "8");
  // no rows and no prefs asked: only the badge and the version
  assert.deepEqual(await run([0, 0]), [["total_unread", "4", "total_mention", "1", "muted_unread", "0"], 8, [], []]);
});

test("readLiveView: 2,500 rows and 1,200 prefs asked at once are read in slices and come back whole, in order", async () => {
  const client = fx.store.clientFor("{u002}");
  const k = keys();
  const names = Array.from({ length: 2500 }, (_, i) => `c${i}`);
  // every third row stored, every fifth prefs
  await client.hset(k[2], ...names.filter((_, i) => i % 3 === 0).flatMap((c) => [c, `row-${c}`]));
  await client.hset(k[3], ...names.filter((_, i) => i % 5 === 0).flatMap((c) => [c, `p-${c}`]));
  const held = names.slice(0, 1200);
  const r = (await callScript(client, "readLiveView", [...k], [0, names.length, ...names, ...held])) as [unknown, number, (string | null)[], (string | null)[]];
  assert.deepEqual(r[2], names.map((c, i) => (i % 3 === 0 ? `row-${c}` : null)));
  assert.deepEqual(r[3], held.map((c, i) => (i % 5 === 0 ? `p-${c}` : null)));
});
