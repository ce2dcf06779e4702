import { test } from "node:test";
import assert from "node:assert/strict";
import { LUA_STATUS, luaStatus } from "../../core/index.js";
import { Conv, hexIds, useRedis } from "./helpers.js";

const fx = useRedis();

test("createGroup: writes meta at version 1 and every initial member as 0||A", async () => {
  const c = new Conv(fx);
  const [owner, a, b] = hexIds(3) as [string, string, string];
  const reply = await c.createGroup(owner, [owner, a, b], 1_700_000_000_555);
  assert.deepEqual(reply, [LUA_STATUS.OK, 1, 3]);
  assert.equal(luaStatus(reply), "OK");
  assert.deepEqual(await c.hgetall(c.keys.grpmeta), {
    version: "1",
    owner,
    member_count: "3",
    created_at: "1700000000555",
  });
  assert.deepEqual(await c.hgetall(c.keys.grpmembers), { [owner]: "0||A", [a]: "0||A", [b]: "0||A" });
  // no control message, no sequence: the initial cohort sees the conversation from its start
  assert.equal(await c.get(c.keys.cseq), null);
  assert.equal(await c.exists(c.keys.hist), 0);
  assert.equal(await c.exists(c.keys.outbox), 0);
});

test("createGroup: an owner-only group has one member", async () => {
  const c = new Conv(fx);
  const [owner] = hexIds(1) as [string];
  assert.deepEqual(await c.createGroup(owner, [owner]), [0, 1, 1]);
  assert.deepEqual(await c.hgetall(c.keys.grpmembers), { [owner]: "0||A" });
  assert.equal((await c.hgetall(c.keys.grpmeta)).member_count, "1");
});

test("createGroup: a second call returns -4 and changes nothing", async () => {
  const c = new Conv(fx);
  const [owner, a, other, x] = hexIds(4) as [string, string, string, string];
  assert.deepEqual(await c.createGroup(owner, [owner, a]), [0, 1, 2]);
  const before = await c.snapshot();
  const again = await c.createGroup(other, [other, x], 1_800_000_000_000);
  assert.deepEqual(again, [LUA_STATUS.GROUP_EXISTS]);
  assert.equal(luaStatus(again), "GROUP_EXISTS");
  assert.deepEqual(await c.snapshot(), before);
  assert.deepEqual(await c.hgetall(c.keys.grpmembers), { [owner]: "0||A", [a]: "0||A" });
});

test("createGroup: groups under different tenants or groups do not see each other", async () => {
  const c1 = new Conv(fx);
  const c2 = new Conv(fx);
  const [o1, o2] = hexIds(2) as [string, string];
  assert.deepEqual(await c1.createGroup(o1, [o1]), [0, 1, 1]);
  assert.deepEqual(await c2.createGroup(o2, [o2]), [0, 1, 1]);
  assert.equal((await c2.hgetall(c2.keys.grpmeta)).owner, o2);
});

test("createGroup: a repeated member id counts once", async () => {
  const c = new Conv(fx);
  const [owner, a] = hexIds(2) as [string, string];
  assert.deepEqual(await c.createGroup(owner, [owner, a, a, owner]), [LUA_STATUS.OK, 1, 2]);
  assert.equal((await c.hgetall(c.keys.grpmeta)).member_count, "2");
  assert.deepEqual(await c.hgetall(c.keys.grpmembers), { [owner]: "0||A", [a]: "0||A" });
});
