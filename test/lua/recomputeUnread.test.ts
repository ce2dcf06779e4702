import { test } from "node:test";
import assert from "node:assert/strict";
import { callScript } from "../../core/index.js";
import { Conv, hexId, hexIds, legacyHistory, normalRest, useRedis } from "./helpers.js";

const fx = useRedis();
const JOIN = 1;
const LEAVE = 2;

const recompute = (c: Conv, user: string, hidden: number, deleted: number, cap = 200) =>
  callScript(c.client, "recomputeUnread", [c.keys.grpmembers, c.keys.hist, c.keys.readseq, c.keys.grpmeta, c.keys.unreadidx], [user, hidden, deleted, cap]);

test("recomputeUnread: base = max(read, hidden, joined_at, deleted); mentions from field 9; own messages and control messages never count", async () => {
  const c = new Conv(fx);
  const [owner, u] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner, u]);
  await c.send(owner, 1); // 1
  // 2 mentions u: a history entry with field 9
  await c.run("commitMessages", [1, c.keys.outboxRef, hexIds(1)[0]!, owner, `${normalRest("0".repeat(31) + "2", owner)}|${u}`]);
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

/** [unread, exact, mentions, mentionFirst] of a recompute reply. */
const counts = (r: unknown[]) => [r[8], r[9], r[10], r[11]];

test("recomputeUnread: 1,000-user join events in (base, head] count for nothing; unread and mentions as worked out by hand", async () => {
  const c = new Conv(fx);
  const [owner, u, b] = hexIds(3) as [string, string, string];
  await c.createGroup(owner, [owner, u, b]);
  await c.send(owner, 1); // 1
  for (let v = 1; v <= 3; v++) await c.membership(JOIN, v, hexIds(1000), { sender: owner }); // 2, 3, 4: ~21 KB each
  assert.ok((await c.zrange(c.keys.hist))[1]![0].length > 20_000);
  await c.run("commitMessages", [4, c.keys.outboxRef, hexId(), b, `${normalRest(hexId(), b)}|${owner}${u}`]); // 5: b mentions owner and u
  await c.send(owner, 4); // 6
  await c.send(u, 4); // 7: u's own
  await c.send(b, 4, { countsUnread: false }); // 8
  // u, base 0, head 8: 1 (owner), 5 (b), 6 (owner) count; 2–4 control, 7 own, 8 not counting; the mention at 5
  assert.deepEqual(counts(await recompute(c, u, 0, 0)), [3, 1, 1, 5]);
  // read 5: 6 alone
  await c.client.hset(c.keys.readseq, u, 5);
  assert.deepEqual(counts(await recompute(c, u, 0, 0)), [1, 1, 0, -1]);
  await c.client.hdel(c.keys.readseq, u);
  // cap 3: 8 - 0 > 3, unread = 3 inexact, mentions over (5, 8]: none; cap 4: (4, 8] holds the mention at 5
  assert.deepEqual(counts(await recompute(c, u, 0, 0, 3)), [3, 0, 0, -1]);
  assert.deepEqual(counts(await recompute(c, u, 0, 0, 4)), [4, 0, 1, 5]);
  // owner: 5 (b, names owner) and 7 (u); b: 1, 6 (owner), 7 (u), no mention
  assert.deepEqual(counts(await recompute(c, owner, 0, 0)), [2, 1, 1, 5]);
  assert.deepEqual(counts(await recompute(c, b, 0, 0)), [3, 1, 0, -1]);
});

test("recomputeUnread: history written before the unread index is read from hist, the rest from the index, across the boundary", async () => {
  const c = new Conv(fx);
  const [owner, u] = hexIds(2) as [string, string];
  await legacyHistory(c, owner, [owner, u], u); // 1 owner, 2 owner mentions u, 3 control (old layout, no index)
  await c.membership(JOIN, 1, [hexId()], { sender: owner }); // 4: the first record of this code
  assert.equal((await c.hgetall(c.keys.grpmeta)).unread_index_from, "4");
  await c.run("commitMessages", [2, c.keys.outboxRef, hexId(), owner, `${normalRest(hexId(), owner)}|${u}`]); // 5: owner mentions u
  await c.send(u, 2); // 6: u's own
  assert.deepEqual((await c.zrange(c.keys.unreadidx)).map(([m]) => m), [`5|${owner}|${u}`, `6|${u}|`]);
  // by hand, u (joined_at 0): 1, 2, 5 count; mentions at 2 and 5
  assert.deepEqual(counts(await recompute(c, u, 0, 0)), [3, 1, 2, 2]);
  // base 1 and 3 (the boundary: the old range is empty)
  assert.deepEqual(counts(await recompute(c, u, 1, 0)), [2, 1, 2, 2]);
  assert.deepEqual(counts(await recompute(c, u, 3, 0)), [1, 1, 1, 5]);
  // past the cap the mentions are those of the newest `cap` seqs: (3, 6], (2, 6], (1, 6]
  assert.deepEqual(counts(await recompute(c, u, 0, 0, 3)), [3, 0, 1, 5]);
  assert.deepEqual(counts(await recompute(c, u, 0, 0, 4)), [4, 0, 1, 5]);
  assert.deepEqual(counts(await recompute(c, u, 0, 0, 5)), [5, 0, 2, 2]);
  // owner: only 6 (u)
  assert.deepEqual(counts(await recompute(c, owner, 0, 0)), [1, 1, 0, -1]);
});
