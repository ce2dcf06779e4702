import { test } from "node:test";
import assert from "node:assert/strict";
import { LUA_STATUS, luaStatus } from "../../core/index.js";
import { Conv, hexId, hexIds, useRedis, type LuaFixture } from "./helpers.js";

const fx = useRedis();

const JOIN = 1;
const LEAVE = 2;
const REMOVE = 3;

/**
 * owner and b from the start; c joins at 3 (joined_at 2), leaves at 6 (left_at 6):
 *   1 owner | 2 b | 3 join c | 4 c | 5 owner | 6 c leaves | 7 owner
 */
async function scenario(fxIn: LuaFixture) {
  const c = new Conv(fxIn);
  const [owner, b, u] = hexIds(3) as [string, string, string];
  await c.createGroup(owner, [owner, b]);
  await c.send(owner, 1);
  await c.send(b, 1);
  await c.membership(JOIN, 1, [u], { sender: owner });
  await c.send(u, 2);
  await c.send(owner, 2);
  await c.membership(LEAVE, 2, [u]);
  await c.send(owner, 3);
  const entries = (await c.zrange(c.keys.hist)).map(([e]) => e);
  assert.equal(entries.length, 7);
  return { c, owner, b, u, entries };
}

test("readHistory: an initial member sees everything from seq 1", async () => {
  const { c, owner, entries } = await scenario(fx);
  assert.deepEqual(await c.run("readHistory", [owner, 0, 100]), [LUA_STATUS.OK, 0, -1, "A", 1, ...entries]);
  assert.deepEqual(await c.run("readHistory", [owner, 5, 100]), [0, 0, -1, "A", 1, entries[5], entries[6]]);
  assert.deepEqual(await c.run("readHistory", [owner, 0, 2]), [0, 0, -1, "A", 1, entries[0], entries[1]]);
  assert.deepEqual(await c.run("readHistory", [owner, 7, 100]), [0, 0, -1, "A", 1]);
});

test("readHistory: (joined_at, left_at) clips both ends, both exclusive", async () => {
  const { c, u, entries } = await scenario(fx);
  // joined_at 2, left_at 6: seqs 3, 4, 5; earliest = max(1, 2 + 1)
  assert.deepEqual(await c.run("readHistory", [u, 0, 100]), [0, 2, 6, "L", 3, entries[2], entries[3], entries[4]]);
  assert.deepEqual(await c.run("readHistory", [u, 3, 100]), [0, 2, 6, "L", 3, entries[3], entries[4]]);
  assert.deepEqual(await c.run("readHistory", [u, 0, 2]), [0, 2, 6, "L", 3, entries[2], entries[3]]);
  assert.deepEqual(await c.run("readHistory", [u, 5, 100]), [0, 2, 6, "L", 3]);
});

test("readHistory: a removed member sees up to left_at - 1 with state R", async () => {
  const { c, owner, b, entries } = await scenario(fx);
  const r = await c.membership(REMOVE, 3, [b], { sender: owner }); // seq 8
  assert.equal(r.reply[1], 8);
  await c.send(owner, 4); // seq 9
  assert.deepEqual(await c.run("readHistory", [b, 0, 100]), [0, 0, 8, "R", 1, ...entries]);
});

test("readHistory: a rejoin replaces the interval", async () => {
  const { c, owner, u } = await scenario(fx);
  await c.membership(JOIN, 3, [u], { sender: owner }); // seq 8, joined_at 7
  await c.send(owner, 4); // seq 9
  const entries = (await c.zrange(c.keys.hist)).map(([e]) => e);
  assert.deepEqual(await c.run("readHistory", [u, 0, 100]), [0, 7, -1, "A", 8, entries[7], entries[8]]);
});

test("readHistory: earliest is max(global earliest, joined_at + 1) once history is trimmed", async () => {
  const { c, owner, u } = await scenario(fx);
  await c.client.zremrangebyscore(c.keys.hist, 1, 4);
  const entries = (await c.zrange(c.keys.hist)).map(([e]) => e);
  assert.deepEqual(await c.run("readHistory", [owner, 0, 100]), [0, 0, -1, "A", 5, ...entries]);
  assert.deepEqual(await c.run("readHistory", [u, 0, 100]), [0, 2, 6, "L", 5, entries[0]]);
});

test("readHistory: an empty history gives earliest = joined_at + 1 and no entries", async () => {
  const c = new Conv(fx);
  const [owner] = hexIds(1) as [string];
  await c.createGroup(owner, [owner]);
  assert.deepEqual(await c.run("readHistory", [owner, 0, 100]), [0, 0, -1, "A", 1]);
});

test("readHistory: -5 for a never-member and for a missing group", async () => {
  const { c } = await scenario(fx);
  const never = await c.run("readHistory", [hexId(), 0, 100]);
  assert.deepEqual(never, [LUA_STATUS.NOT_VISIBLE]);
  assert.equal(luaStatus(never), "NOT_VISIBLE");
  const missing = new Conv(fx);
  assert.deepEqual(await missing.run("readHistory", [hexId(), 0, 100]), [-5]);
});
