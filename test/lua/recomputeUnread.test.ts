import { test } from "node:test";
import assert from "node:assert/strict";
import { callScript } from "../../core/index.js";
import { Conv, hexIds, normalRest, useRedis } from "./helpers.js";

const fx = useRedis();
const LEAVE = 2;

const recompute = (c: Conv, user: string, hidden: number, deleted: number, cap = 200) =>
  callScript(c.client, "recomputeUnread", [c.keys.grpmembers, c.keys.hist, c.keys.readseq, c.keys.grpmeta], [user, hidden, deleted, cap]);

test("recomputeUnread: base = max(read, hidden, joined_at, deleted); mentions from field 9; own messages and control messages never count", async () => {
  const c = new Conv(fx);
  const [owner, u] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner, u]);
  await c.send(owner, 1); // 1
  // 2 mentions u: a history entry with field 9
  await c.client.zadd(c.keys.hist, 2, `2|${normalRest("0".repeat(31) + "2", owner)}|${u}`);
  await c.client.set(c.keys.cseq, 2);
  await c.send(u, 1); // 3: u's own
  await c.send(owner, 1); // 4
  let r = await recompute(c, u, 0, 0);
  // by hand: (0, 4] from others = 1, 2, 4 → 3; mention at 2
  assert.deepEqual([r[0], r[5], r[8], r[9], r[10], r[11]], [0, 4, 3, 1, 1, 2]);
  await c.client.hset(c.keys.readseq, u, 1);
  r = await recompute(c, u, 0, 0);
  assert.deepEqual([r[8], r[10], r[11]], [2, 1, 2]);
  r = await recompute(c, u, 2, 0); // hidden_before 2
  assert.deepEqual([r[8], r[10], r[11]], [1, 0, -1]);
  r = await recompute(c, u, 0, 4); // deleted_before 4: nothing
  assert.deepEqual([r[8], r[10]], [0, 0]);
});

test("recomputeUnread: a member who left sees up to left_at - 1; the cap makes it inexact", async () => {
  const c = new Conv(fx);
  const [owner, u] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner, u]);
  for (let i = 0; i < 5; i++) await c.send(owner, 1); // 1..5
  let r = await recompute(c, u, 0, 0, 3);
  assert.deepEqual([r[8], r[9]], [3, 0]);
  await c.membership(LEAVE, 1, [u]); // 6: left_at 6
  await c.send(owner, 2); // 7
  r = await recompute(c, u, 0, 0);
  // by hand: head 5 (the leave event and 7 are not visible), unread 5
  assert.deepEqual([r[3], r[5], r[8], r[9]], ["L", 5, 5, 1]);
  assert.deepEqual(await recompute(c, hexIds(1)[0]!, 0, 0), [-5]);
});
