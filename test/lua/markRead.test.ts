import { test } from "node:test";
import assert from "node:assert/strict";
import { LUA_STATUS, luaStatus } from "../../core/index.js";
import { Conv, hexId, hexIds, useRedis } from "./helpers.js";

const fx = useRedis();

const JOIN = 1;
const LEAVE = 2;

test("markRead: moves forward only", async () => {
  const c = new Conv(fx);
  const [owner, b] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner, b]);
  for (let i = 0; i < 5; i++) await c.send(b, 1);

  assert.deepEqual(await c.run("markRead", [owner, 3]), [LUA_STATUS.OK, 3]);
  assert.equal(luaStatus(await c.run("markRead", [owner, 3])), "OK");
  assert.deepEqual(await c.hgetall(c.keys.readseq), { [owner]: "3" });
  assert.deepEqual(await c.run("markRead", [owner, 1]), [0, 3]);
  assert.deepEqual(await c.hgetall(c.keys.readseq), { [owner]: "3" });
  assert.deepEqual(await c.run("markRead", [owner, 4]), [0, 4]);
  assert.deepEqual(await c.run("markRead", [b, 2]), [0, 2]);
  assert.deepEqual(await c.hgetall(c.keys.readseq), { [owner]: "4", [b]: "2" });
});

test("markRead: clamps to the visible head", async () => {
  const c = new Conv(fx);
  const [owner, b] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner, b]);
  for (let i = 0; i < 3; i++) await c.send(b, 1);
  assert.deepEqual(await c.run("markRead", [owner, 1000]), [0, 3]);
  assert.deepEqual(await c.hgetall(c.keys.readseq), { [owner]: "3" });
});

test("markRead: a member who left is clamped to left_at - 1", async () => {
  const c = new Conv(fx);
  const [owner, u] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner, u]);
  await c.send(owner, 1); // 1
  await c.send(owner, 1); // 2
  await c.membership(LEAVE, 1, [u]); // 3: left_at 3
  await c.send(owner, 2); // 4
  assert.deepEqual(await c.run("markRead", [u, 4]), [0, 2]);
  assert.deepEqual(await c.hgetall(c.keys.readseq), { [u]: "2" });
});

test("markRead: a member who joined later reads up to the head", async () => {
  const c = new Conv(fx);
  const [owner, u] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner]);
  await c.send(owner, 1); // 1
  await c.membership(JOIN, 1, [u], { sender: owner }); // 2: joined_at 1
  await c.send(owner, 2); // 3
  assert.deepEqual(await c.run("markRead", [u, 3]), [0, 3]);
  assert.deepEqual(await c.run("markRead", [u, 9]), [0, 3]);
});

test("markRead: with no history nothing is written", async () => {
  const c = new Conv(fx);
  const [owner] = hexIds(1) as [string];
  await c.createGroup(owner, [owner]);
  assert.deepEqual(await c.run("markRead", [owner, 5]), [0, 0]);
  assert.equal(await c.exists(c.keys.readseq), 0);
});

test("markRead: -5 for a never-member and for a missing group, and nothing is written", async () => {
  const c = new Conv(fx);
  const [owner] = hexIds(1) as [string];
  await c.createGroup(owner, [owner]);
  await c.send(owner, 1);
  const stranger = hexId();
  const never = await c.run("markRead", [stranger, 1]);
  assert.deepEqual(never, [LUA_STATUS.NOT_VISIBLE]);
  assert.equal(luaStatus(never), "NOT_VISIBLE");
  assert.equal(await c.exists(c.keys.readseq), 0);

  const missing = new Conv(fx);
  assert.deepEqual(await missing.run("markRead", [stranger, 1]), [-5]);
  assert.equal(await missing.exists(missing.keys.readseq), 0);
});
