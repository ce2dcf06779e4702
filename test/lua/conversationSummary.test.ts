import { test } from "node:test";
import assert from "node:assert/strict";
import { LUA_STATUS, luaStatus } from "../../core/index.js";
import { Conv, hexId, hexIds, legacyHistory, normalRest, useRedis, type LuaFixture } from "./helpers.js";

const fx = useRedis();

const JOIN = 1;
const LEAVE = 2;
const CAP = 200;

/**
 *   1 owner | 2 b | 3 b | 4 join u (CONTROL) | 5 b | 6 u (countsUnread 0) | 7 owner
 * u: joined_at 3.
 */
async function scenario(fxIn: LuaFixture) {
  const c = new Conv(fxIn);
  const [owner, b, u] = hexIds(3) as [string, string, string];
  await c.createGroup(owner, [owner, b]);
  await c.send(owner, 1);
  await c.send(b, 1);
  await c.send(b, 1);
  await c.membership(JOIN, 1, [u], { sender: owner });
  await c.send(b, 2);
  await c.send(u, 2, { countsUnread: false });
  await c.send(owner, 2);
  const entries = (await c.zrange(c.keys.hist)).map(([e]) => e);
  assert.equal(entries.length, 7);
  return { c, owner, b, u, entries };
}

test("conversationSummary: unread excludes own messages and CONTROL messages", async () => {
  const { c, owner, b, u, entries } = await scenario(fx);
  // owner: 2, 3, 5 (b); not 1, 7 (own), 4 (control), 6 (countsUnread 0)
  assert.deepEqual(await c.run("conversationSummary", [owner, CAP]), [LUA_STATUS.OK, 0, -1, "A", 0, entries[6], 3, 1]);
  // b: 1, 7 (owner)
  assert.deepEqual(await c.run("conversationSummary", [b, CAP]), [0, 0, -1, "A", 0, entries[6], 2, 1]);
  // u (joined_at 3): 5 (b), 7 (owner); not 4 (control), 6 (own)
  assert.deepEqual(await c.run("conversationSummary", [u, CAP]), [0, 3, -1, "A", 0, entries[6], 2, 1]);
});

test("conversationSummary: base is max(read_seq, joined_at)", async () => {
  const { c, owner, u, entries } = await scenario(fx);
  assert.deepEqual(await c.run("markRead", [owner, 3]), [0, 3]);
  assert.deepEqual(await c.run("conversationSummary", [owner, CAP]), [0, 0, -1, "A", 3, entries[6], 1, 1]);
  assert.deepEqual(await c.run("markRead", [owner, 7]), [0, 7]);
  assert.deepEqual(await c.run("conversationSummary", [owner, CAP]), [0, 0, -1, "A", 7, entries[6], 0, 1]);
  // a read_seq below joined_at does not widen the window
  await c.client.hset(c.keys.readseq, u, 1);
  assert.deepEqual(await c.run("conversationSummary", [u, CAP]), [0, 3, -1, "A", 1, entries[6], 2, 1]);
});

test("conversationSummary: unread is bounded by the cap (exact 0 when head - base > cap)", async () => {
  const { c, owner, entries } = await scenario(fx);
  // head - base = 7 > 6: unread = cap, not exact
  assert.deepEqual(await c.run("conversationSummary", [owner, 6]), [0, 0, -1, "A", 0, entries[6], 6, 0]);
  assert.deepEqual(await c.run("conversationSummary", [owner, 2]), [0, 0, -1, "A", 0, entries[6], 2, 0]);
  // head - base = 7 = cap: counted exactly
  assert.deepEqual(await c.run("conversationSummary", [owner, 7]), [0, 0, -1, "A", 0, entries[6], 3, 1]);
  await c.run("markRead", [owner, 2]);
  // head - base = 5 = cap
  assert.deepEqual(await c.run("conversationSummary", [owner, 5]), [0, 0, -1, "A", 2, entries[6], 2, 1]);
  assert.deepEqual(await c.run("conversationSummary", [owner, 4]), [0, 0, -1, "A", 2, entries[6], 4, 0]);
});

test("conversationSummary: a member who left sees the head below left_at", async () => {
  const { c, owner, u, entries } = await scenario(fx);
  const leave = await c.membership(LEAVE, 2, [u]); // seq 8: left_at 8
  assert.equal(leave.reply[1], 8);
  await c.send(owner, 3); // seq 9, invisible to u
  assert.deepEqual(await c.run("conversationSummary", [u, CAP]), [0, 3, 8, "L", 0, entries[6], 2, 1]);
});

test("conversationSummary: no visible record gives an empty head and 0 unread", async () => {
  const c = new Conv(fx);
  const [owner] = hexIds(1) as [string];
  await c.createGroup(owner, [owner]);
  assert.deepEqual(await c.run("conversationSummary", [owner, CAP]), [0, 0, -1, "A", 0, "", 0, 1]);
});

test("conversationSummary: -5 for a never-member and for a missing group", async () => {
  const { c } = await scenario(fx);
  const never = await c.run("conversationSummary", [hexId(), CAP]);
  assert.deepEqual(never, [LUA_STATUS.NOT_VISIBLE]);
  assert.equal(luaStatus(never), "NOT_VISIBLE");
  assert.deepEqual(await new Conv(fx).run("conversationSummary", [hexId(), CAP]), [-5]);
});

/** [unread, exact] of a summary reply. */
const unreadOf = (r: unknown[]) => [r[6], r[7]];

test("conversationSummary: 1,000-user join events in (base, head] count for nothing", async () => {
  const c = new Conv(fx);
  const [owner, u] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner, u]);
  await c.send(owner, 1); // 1
  for (let v = 1; v <= 3; v++) await c.membership(JOIN, v, hexIds(1000), { sender: owner }); // 2, 3, 4
  await c.send(owner, 4); // 5
  await c.send(u, 4); // 6: u's own
  // u: 1 and 5; owner: 6
  assert.deepEqual(unreadOf(await c.run("conversationSummary", [u, CAP])), [2, 1]);
  assert.deepEqual(unreadOf(await c.run("conversationSummary", [owner, CAP])), [1, 1]);
  // hidden_before 1: 5 alone; cap 5: 6 - 0 > 5, inexact
  assert.deepEqual(unreadOf(await c.run("conversationSummary", [u, CAP, 1, 0])), [1, 1]);
  assert.deepEqual(unreadOf(await c.run("conversationSummary", [u, 5])), [5, 0]);
});

test("conversationSummary: history written before the unread index counts with the records after it", async () => {
  const c = new Conv(fx);
  const [owner, u] = hexIds(2) as [string, string];
  await legacyHistory(c, owner, [owner, u], u); // 1 owner, 2 owner, 3 control (old layout)
  await c.run("commitMessages", [1, c.keys.outboxRef, hexId(), owner, normalRest(hexId(), owner)]); // 4: the first of this code
  await c.send(u, 1); // 5
  assert.equal((await c.hgetall(c.keys.grpmeta)).unread_index_from, "4");
  // u: 1, 2 (hist) and 4 (index); read 1: 2 and 4; read 3: 4; owner: 5
  assert.deepEqual(unreadOf(await c.run("conversationSummary", [u, CAP])), [3, 1]);
  await c.client.hset(c.keys.readseq, u, 1);
  assert.deepEqual(unreadOf(await c.run("conversationSummary", [u, CAP])), [2, 1]);
  await c.client.hset(c.keys.readseq, u, 3);
  assert.deepEqual(unreadOf(await c.run("conversationSummary", [u, CAP])), [1, 1]);
  assert.deepEqual(unreadOf(await c.run("conversationSummary", [owner, CAP])), [1, 1]);
});
