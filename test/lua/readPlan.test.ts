import { test } from "node:test";
import assert from "node:assert/strict";
import { LUA_STATUS } from "../../core/index.js";
import { Conv, hexId, hexIds, useRedis } from "./helpers.js";

const fx = useRedis();

test("readPlan: version, owner, member count and each user's state in one snapshot; writes nothing", async () => {
  const c = new Conv(fx);
  const [owner, a, b, stranger] = hexIds(4) as [string, string, string, string];
  await c.createGroup(owner, [owner, a, b]);
  await c.membership(3, 1, [b], { sender: owner }); // b REMOVED, version 2
  await c.membership(2, 2, [a]); // a LEFT, version 3
  const before = await c.snapshot();
  assert.deepEqual(await c.run("readPlan", [owner, a, b, stranger]), [LUA_STATUS.OK, 3, owner, 1, 0, "A", "L", "R", ""]);
  assert.deepEqual(await c.run("readPlan", []), [0, 3, owner, 1, 0]);
  assert.deepEqual(await c.snapshot(), before);
});

test("readPlan: a missing group answers -3", async () => {
  const c = new Conv(fx);
  assert.deepEqual(await c.run("readPlan", [hexId()]), [LUA_STATUS.GROUP_NOT_FOUND]);
});
