/**
 * lua/cmd-sync/indexLegacyCmdStates-5.lua, called directly: rows as the code before issue 23 wrote
 * them (four-field value in cmdstate, member in cmdactive, none in cmdunread) are put in cmdunread
 * chunk by chunk from a cursor, rows with a last seq and other users' rows are left alone, the
 * user is marked at the end (later calls answer at once), and a fenced call writes nothing.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { callScript, cmdStateKeys, KeySpace, newUuid, uuidToHex } from "../../core/index.js";
import { keyPrefix, useRedis } from "./helpers.js";

const fx = useRedis();

/** The cmdactive member built here by hand: 2^53-1-activeAt as 14 hex, type as 3 digits. */
const member = (ref: string, type: number, id: string, activeAt: number) =>
  `${ref}|${(Number.MAX_SAFE_INTEGER - activeAt).toString(16).padStart(14, "0")}|${String(type).padStart(3, "0")}|${id}`;

test("indexLegacyCmdStates: the user's four-field rows into cmdunread, `count` rows a call from the cursor, then marked; fenced → -10", async () => {
  const space = new KeySpace(keyPrefix());
  const k = cmdStateKeys(space, 17);
  const client = fx.store.clientForKey(k.state);
  const keys = [k.state, k.index, k.unread, k.indexed, k.lease];
  const ref = `${uuidToHex(newUuid())}:${uuidToHex(newUuid())}`;
  const other = `${uuidToHex(newUuid())}:${uuidToHex(newUuid())}`;
  // five rows of the user, active 105 … 101 (cmdactive order: c5 first); c3 has a last seq (written since the upgrade)
  for (let i = 1; i <= 5; i++) {
    await client.hset(k.state, `${ref}|2|c${i}____cmd`, i === 3 ? `0|0|${100 + i}|1|4` : `${i}|0|${100 + i}|1`);
    await client.zadd(k.index, 0, member(ref, 2, `c${i}____cmd`, 100 + i));
  }
  await client.hset(k.state, `${other}|2|x____cmd`, "0|0|500|1");
  await client.zadd(k.index, 0, member(other, 2, "x____cmd", 500));

  // fenced: another owner's lease, nothing written
  await client.hset(k.lease, "owner", "node-b", "token", "3");
  assert.deepEqual((await callScript(client, "indexLegacyCmdStates", keys, ["", "0", ref, "", "2"])).map(Number), [-10]);
  assert.equal(await client.exists(k.unread, k.indexed), 0);
  await client.del(k.lease);

  // chunk 1: c5, c4 (both four fields)
  let r = await callScript(client, "indexLegacyCmdStates", keys, ["", "0", ref, "", "2"]);
  assert.deepEqual(r.slice(0, 3).map(Number), [0, 2, 2]);
  assert.equal(r[3], member(ref, 2, "c4____cmd", 104));
  // chunk 2: c3 (has a last seq: left out), c2
  r = await callScript(client, "indexLegacyCmdStates", keys, ["", "0", ref, String(r[3]), "2"]);
  assert.deepEqual(r.slice(0, 3).map(Number), [0, 2, 1]);
  assert.equal(await client.hexists(k.indexed, ref), 0, "not marked before the end");
  // chunk 3: c1, fewer than asked: the end, marked
  r = await callScript(client, "indexLegacyCmdStates", keys, ["", "0", ref, String(r[3]), "2"]);
  assert.deepEqual(r.map(String), ["0", "1", "1", ""]);
  assert.equal(await client.hget(k.indexed, ref), "1");
  assert.deepEqual((await client.zrange(k.unread, "0", "-1")).sort(),
    [5, 4, 2, 1].map((i) => member(ref, 2, `c${i}____cmd`, 100 + i)).sort());
  // marked: answers at once, from any cursor
  assert.deepEqual((await callScript(client, "indexLegacyCmdStates", keys, ["", "0", ref, "", "2"])).map(String), ["0", "0", "0", ""]);
  // the other user's row was never touched
  assert.equal(await client.zscore(k.unread, member(other, 2, "x____cmd", 500)), null);
});
