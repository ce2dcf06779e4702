import { test } from "node:test";
import assert from "node:assert/strict";
import { LUA_STATUS, luaStatus } from "../../core/index.js";
import { Conv, hexIds, useRedis } from "./helpers.js";

const fx = useRedis();

test("transferOwner: sets the owner to a member and bumps the version; members and history untouched", async () => {
  const c = new Conv(fx);
  const [owner, a, b] = hexIds(3) as [string, string, string];
  await c.createGroup(owner, [owner, a, b], 1_700_000_000_555);
  const members = await c.hgetall(c.keys.grpmembers);
  const reply = await c.run("transferOwner", [1, a]);
  assert.deepEqual(reply, [LUA_STATUS.OK, 2, owner]);
  assert.deepEqual(await c.hgetall(c.keys.grpmeta), { version: "2", owner: a, member_count: "3", created_at: "1700000000555" });
  assert.deepEqual(await c.hgetall(c.keys.grpmembers), members);
  // no CONTROL message: no sequence, no history, no outbox, and with nothing pending no delta
  assert.equal(await c.get(c.keys.cseq), null);
  assert.equal(await c.exists(c.keys.hist), 0);
  assert.equal(await c.exists(c.keys.outbox), 0);
  assert.equal(await c.exists(c.keys.grpdeltas), 0);
});

test("transferOwner: to the current owner answers {1, version} and writes nothing, whatever V", async () => {
  const c = new Conv(fx);
  const [owner, a] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner, a]);
  assert.deepEqual(await c.run("transferOwner", [1, a]), [0, 2, owner]);
  const before = await c.snapshot();
  // the retry of the same transfer, planned at the old version 1
  const again = await c.run("transferOwner", [1, a]);
  assert.deepEqual(again, [LUA_STATUS.DUPLICATE, 2]);
  assert.equal(luaStatus(again), "DUPLICATE");
  assert.deepEqual(await c.snapshot(), before);
});

test("transferOwner: a stale version answers {-1, current}; no group {-3}; a non-member {-6, target}; nothing written", async () => {
  const c = new Conv(fx);
  const [owner, a, b, stranger] = hexIds(4) as [string, string, string, string];
  assert.deepEqual(await c.run("transferOwner", [1, a]), [LUA_STATUS.GROUP_NOT_FOUND]);
  assert.equal(await c.exists(c.keys.grpmeta), 0);
  await c.createGroup(owner, [owner, a, b]);
  await c.membership(3, 1, [b], { sender: owner }); // b removed at J = 1, version 2
  const before = await c.snapshot();
  assert.deepEqual(await c.run("transferOwner", [1, a]), [LUA_STATUS.MEMBERSHIP_CHANGED, 2]);
  assert.deepEqual(await c.run("transferOwner", [2, b]), [LUA_STATUS.PLAN_STALE, b]);
  assert.deepEqual(await c.run("transferOwner", [2, stranger]), [LUA_STATUS.PLAN_STALE, stranger]);
  assert.deepEqual(await c.snapshot(), before);
});

test("transferOwner: with a message pending at an older version, writes an empty delta so its audience still expands", async () => {
  const c = new Conv(fx);
  const [owner, a, b] = hexIds(3) as [string, string, string];
  await c.createGroup(owner, [owner, a, b]);
  const sent = await c.send(a, 1); // seq 1, frozen at version 1, RECORDED
  assert.equal(sent.reply[0], LUA_STATUS.OK);
  assert.deepEqual(await c.run("transferOwner", [1, b]), [0, 2, owner]);
  assert.deepEqual(await c.hgetall(c.keys.grpdeltas), { 2: "4|" });
  // the relay's read walks down from version 2 to 1 through the empty delta: all three members
  const loaded = await c.run("loadForDispatch", [1000, c.keys.outboxRef, "1"]);
  assert.deepEqual(loaded, ["1", "D", loaded[2], "1", [owner, a, b].sort().join("")]);
  // a removal afterwards keeps the delta chain whole (3 on top of 2)
  await c.membership(3, 2, [a], { sender: b });
  assert.deepEqual(Object.keys(await c.hgetall(c.keys.grpdeltas)).sort(), ["2", "3"]);
});
