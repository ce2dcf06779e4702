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
  await callScript(client, "advanceCmdStateReads", [k.state, k.unread, k.lease], ["", "0", ref, "2", "g1____cmd", "5", "11"]);
  assert.equal(await client.hget(k.state, `${ref}|2|g1____cmd`), "5|4|1700000000000|11|5");
  assert.equal(await client.zcard(k.unread), 0);
  assert.equal(await client.zcard(k.index), 1);
});

test("advanceCmdStateReads: existing rows only, never back; fenced writes change nothing (-10)", async () => {
  const { space, k, client } = slotKeys();
  const ref = `${uuidToHex(newUuid())}:${uuidToHex(newUuid())}`;
  await client.hset(k.state, `${ref}|2|g1____cmd`, "3|1|100|10");
  let r = await callScript(client, "advanceCmdStateReads", [k.state, k.unread, k.lease], ["", "0", ref, "2", "g1____cmd", "7", "20", ref, "2", "none____cmd", "9", "20"]);
  assert.deepEqual(r.map(Number), [0, 1]);
  // a row stored before the last seq was kept (four fields) reads last seq 0 and is written with it
  assert.equal(await client.hget(k.state, `${ref}|2|g1____cmd`), "7|1|100|20|0");
  assert.equal(await client.hexists(k.state, `${ref}|2|none____cmd`), 0);
  r = await callScript(client, "advanceCmdStateReads", [k.state, k.unread, k.lease], ["", "0", ref, "2", "g1____cmd", "5", "30"]);
  assert.deepEqual(r.map(Number), [0, 0]);
  const lease = unitLeaseKey(space, "slot", 17);
  assert.equal(lease, k.lease);
  await client.hset(lease, "owner", "node-b", "token", "3");
  r = await callScript(client, "advanceCmdStateReads", [k.state, k.unread, k.lease], ["", "0", ref, "2", "g1____cmd", "9", "40"]);
  assert.deepEqual(r.map(Number), [-10]);
  r = await callScript(client, "upsertCmdStates", [k.state, k.index, k.unread, k.lease], ["node-b", "2", ref, "2", "g9____cmd", "1", "0", "1", "1", "1"]);
  assert.deepEqual(r.map(Number), [-10], "an older token of the same owner is refused too");
  assert.equal(await client.hget(k.state, `${ref}|2|g1____cmd`), "7|1|100|20|0");
  assert.equal(await client.zcard(k.index), 0);
  r = await callScript(client, "advanceCmdStateReads", [k.state, k.unread, k.lease], ["node-b", "3", ref, "2", "g1____cmd", "9", "40"]);
  assert.deepEqual(r.map(Number), [0, 1]);
});
