/**
 * lua/cmd-sync/upsertCmdStates-4.lua and advanceCmdStateReads-3.lua, called directly: the stored
 * form (field, value, index member) against strings built here by hand, the max merge, and the
 * fence check before any write.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { callScript, cmdStateKeys, KeySpace, newUuid, unitLeaseKey, uuidToHex } from "../../core/index.js";
import { keyPrefix, useRedis } from "./helpers.js";

const fx = useRedis();

function slotKeys() {
  const space = new KeySpace(keyPrefix());
  const k = cmdStateKeys(space, 17);
  return { space, k, client: fx.store.clientForKey(k.state) };
}

test("upsertCmdStates: field `tenantHex:userHex|type|id`, value `read|deletedTo|activeAt|updatedAt|lastMsgSeq`, member with 2^53-1-activeAt in 14 hex, in cmdunread while last > max(read, deletedTo)", async () => {
  const { k, client } = slotKeys();
  const ref = `${uuidToHex(newUuid())}:${uuidToHex(newUuid())}`;
  const reply = await callScript(client, "upsertCmdStates", [k.state, k.index, k.unread, k.lease], ["", "0", ref, "2", "g1____cmd", "3", "0", "100", "10", "5"]);
  assert.deepEqual(reply.map(Number), [0, 1]);
  assert.equal(await client.hget(k.state, `${ref}|2|g1____cmd`), "3|0|100|10|5");
  // 2^53-1 = 0x1fffffffffffff; minus 100 (0x64) is its complement in the low bits: 0x1fffffffffff9b
  assert.deepEqual(await client.zrange(k.index, "0", "-1"), [`${ref}|1fffffffffff9b|002|g1____cmd`]);
  // last 5 > read 3: unread, with the same member
  assert.deepEqual(await client.zrange(k.unread, "0", "-1"), [`${ref}|1fffffffffff9b|002|g1____cmd`]);
  // an older write merges field by field: read 2 < 3 kept, deleted-to 4 > 0 taken, active 1,700,000,000,000 taken
  await callScript(client, "upsertCmdStates", [k.state, k.index, k.unread, k.lease], ["", "0", ref, "2", "g1____cmd", "2", "4", "1700000000000", "9", "4"]);
  // last 4 < 5 kept
  assert.equal(await client.hget(k.state, `${ref}|2|g1____cmd`), "3|4|1700000000000|10|5");
  // 1.7e12 = 0x18bcfe56800; all-ones minus x is x's complement: 0x1fffffffffffff ^ 0x0018bcfe56800 = 0x1ffe74301a97ff
  assert.deepEqual(await client.zrange(k.index, "0", "-1"), [`${ref}|1ffe74301a97ff|002|g1____cmd`]);
  // still unread (5 > max(3, 4)): its unread entry moved with it
  assert.deepEqual(await client.zrange(k.unread, "0", "-1"), [`${ref}|1ffe74301a97ff|002|g1____cmd`]);
  // the same write again changes no row
  assert.deepEqual((await callScript(client, "upsertCmdStates", [k.state, k.index, k.unread, k.lease], ["", "0", ref, "2", "g1____cmd", "2", "4", "1700000000000", "9", "4"])).map(Number), [0, 0]);
  // read 5 reaches the last seq: out of cmdunread, still in cmdactive
  await callScript(client, "advanceCmdStateReads", [k.state, k.unread, k.lease], ["", "0", ref, "2", "g1____cmd", "5", "11", ""]);
  assert.equal(await client.hget(k.state, `${ref}|2|g1____cmd`), "5|4|1700000000000|11|5");
  assert.equal(await client.zcard(k.unread), 0);
  assert.equal(await client.zcard(k.index), 1);
});

test("advanceCmdStateReads: existing rows only, never back; a row of the old code keeps its unknown last seq until a patch settles it; fenced writes change nothing (-10)", async () => {
  const { space, k, client } = slotKeys();
  const ref = `${uuidToHex(newUuid())}:${uuidToHex(newUuid())}`;
  const member = `${ref}|1fffffffffff9b|002|g1____cmd`;
  // as the code before issue 23 wrote it: four fields, in cmdactive; here also in cmdunread, as
  // indexLegacyCmdStates puts it (unknown last seq: unread)
  await client.hset(k.state, `${ref}|2|g1____cmd`, "3|1|100|10");
  await client.zadd(k.unread, 0, member);
  let r = await callScript(client, "advanceCmdStateReads", [k.state, k.unread, k.lease], ["", "0", ref, "2", "g1____cmd", "7", "20", "", ref, "2", "none____cmd", "9", "20", ""]);
  assert.deepEqual(r.map(Number), [0, 1]);
  // no last seq in the patch: the row keeps the old code's four fields (still unknown, still unread)
  assert.equal(await client.hget(k.state, `${ref}|2|g1____cmd`), "7|1|100|20");
  assert.deepEqual(await client.zrange(k.unread, "0", "-1"), [member]);
  assert.equal(await client.hexists(k.state, `${ref}|2|none____cmd`), 0);
  r = await callScript(client, "advanceCmdStateReads", [k.state, k.unread, k.lease], ["", "0", ref, "2", "g1____cmd", "5", "30", ""]);
  assert.deepEqual(r.map(Number), [0, 0]);
  // read 0 (no advance) with last seq 7: settled at its read, out of cmdunread
  r = await callScript(client, "advanceCmdStateReads", [k.state, k.unread, k.lease], ["", "0", ref, "2", "g1____cmd", "0", "31", "7"]);
  assert.deepEqual(r.map(Number), [0, 1]);
  assert.equal(await client.hget(k.state, `${ref}|2|g1____cmd`), "7|1|100|31|7");
  assert.equal(await client.zcard(k.unread), 0);
  // a settled last seq is max-merged like the rest: 6 < 7 changes nothing
  r = await callScript(client, "advanceCmdStateReads", [k.state, k.unread, k.lease], ["", "0", ref, "2", "g1____cmd", "0", "32", "6"]);
  assert.deepEqual(r.map(Number), [0, 0]);
  const lease = unitLeaseKey(space, "slot", 17);
  assert.equal(lease, k.lease);
  await client.hset(lease, "owner", "node-b", "token", "3");
  r = await callScript(client, "advanceCmdStateReads", [k.state, k.unread, k.lease], ["", "0", ref, "2", "g1____cmd", "9", "40", "9"]);
  assert.deepEqual(r.map(Number), [-10]);
  r = await callScript(client, "upsertCmdStates", [k.state, k.index, k.unread, k.lease], ["node-b", "2", ref, "2", "g9____cmd", "1", "0", "1", "1", "1"]);
  assert.deepEqual(r.map(Number), [-10], "an older token of the same owner is refused too");
  assert.equal(await client.hget(k.state, `${ref}|2|g1____cmd`), "7|1|100|31|7");
  assert.equal(await client.zcard(k.index), 0);
  r = await callScript(client, "advanceCmdStateReads", [k.state, k.unread, k.lease], ["node-b", "3", ref, "2", "g1____cmd", "9", "40", ""]);
  assert.deepEqual(r.map(Number), [0, 1]);
});

test("upsertCmdStates on a row of the old code: the other fields merge, the last seq stays unknown (four fields) and the row stays unread", async () => {
  const { k, client } = slotKeys();
  const ref = `${uuidToHex(newUuid())}:${uuidToHex(newUuid())}`;
  await client.hset(k.state, `${ref}|2|g1____cmd`, "3|0|100|10");
  await client.zadd(k.index, 0, `${ref}|1fffffffffff9b|002|g1____cmd`);
  // active 200 (0xc8): member 0x1fffffffffffff - 0xc8 = 0x1fffffffffff37; read 9, last 9
  const r = await callScript(client, "upsertCmdStates", [k.state, k.index, k.unread, k.lease], ["", "0", ref, "2", "g1____cmd", "9", "0", "200", "20", "9"]);
  assert.deepEqual(r.map(Number), [0, 1]);
  assert.equal(await client.hget(k.state, `${ref}|2|g1____cmd`), "9|0|200|20");
  assert.deepEqual(await client.zrange(k.index, "0", "-1"), [`${ref}|1fffffffffff37|002|g1____cmd`]);
  assert.deepEqual(await client.zrange(k.unread, "0", "-1"), [`${ref}|1fffffffffff37|002|g1____cmd`]);
});
