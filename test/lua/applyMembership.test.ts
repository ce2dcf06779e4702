import { test } from "node:test";
import assert from "node:assert/strict";
import { LUA_STATUS, luaStatus } from "../../core/index.js";
import { Conv, hexId, hexIds, splitSorted, useRedis } from "./helpers.js";

const fx = useRedis();

const JOIN = 1;
const LEAVE = 2;
const REMOVE = 3;

/** The commit record "R|version|audience" split into its version and its audience as a sorted set. */
function parseCommit(rec: string | undefined): { version: string; audience: string[] } {
  const m = /^R\|(\d+)\|([0-9a-f]*)$/.exec(rec ?? "");
  assert.ok(m, `commit record ${rec}`);
  return { version: m[1]!, audience: splitSorted(m[2]!) };
}

test("applyMembership: join sets J-1||A, bumps version and member_count and records the CONTROL message", async () => {
  const c = new Conv(fx);
  const [owner, a, b, d] = hexIds(4) as [string, string, string, string];
  await c.createGroup(owner, [owner, a]);
  const m1 = await c.send(owner, 1); // seq 1, still pending

  const ev = await c.membership(JOIN, 1, [b, d], { sender: owner });
  assert.deepEqual(ev.reply, [LUA_STATUS.OK, 2, ev.messageId, 2, 4, 4]);
  assert.equal(luaStatus(ev.reply), "OK");

  assert.deepEqual(await c.hgetall(c.keys.grpmembers), { [owner]: "0||A", [a]: "0||A", [b]: "1||A", [d]: "1||A" });
  const meta = await c.hgetall(c.keys.grpmeta);
  assert.equal(meta.version, "2");
  assert.equal(meta.member_count, "4");
  assert.equal(await c.get(c.keys.cseq), "2");
  assert.deepEqual(await c.zrange(c.keys.hist), [
    [`1|${m1.rest}`, 1],
    [`2|${ev.rest}`, 2],
  ]);
  // commits holds only the CONTROL message; the NORMAL message m1's commit record is its vpending entry (below)
  const commits = await c.hgetall(c.keys.commits);
  assert.deepEqual(Object.keys(commits), ["2"]);
  assert.deepEqual(parseCommit(commits["2"]), { version: "2", audience: [owner, a, b, d].sort() });
  assert.equal((await c.hgetall(c.keys.idem))[ev.idem], "2");
  assert.deepEqual(await c.lrange(c.keys.outbox), [`${c.keys.outboxRef}|1`, `${c.keys.outboxRef}|2`]);
  // the CONTROL message carries its own audience: it is not a group-audience message in vpending;
  // m1 is RECORDED there, frozen at version 1
  assert.deepEqual(await c.zrange(c.keys.vpending), [["1", 1]]);
  // m1 (frozen at version 1) is pending, so the version 2 delta is kept
  assert.deepEqual(await c.hgetall(c.keys.grpdeltas), { "2": `1|${b}${d}` });
});

test("applyMembership: leave sets joined|J|L, remove sets joined|J|R, audience includes the removed", async () => {
  const c = new Conv(fx);
  const [owner, a, b, d] = hexIds(4) as [string, string, string, string];
  await c.createGroup(owner, [owner, a, b, d]);

  const left = await c.membership(LEAVE, 1, [a]);
  assert.deepEqual(left.reply, [0, 1, left.messageId, 2, 3, 4]);
  assert.equal((await c.hgetall(c.keys.grpmembers))[a], "0|1|L");
  assert.deepEqual(parseCommit((await c.hgetall(c.keys.commits))["1"]), { version: "2", audience: [owner, a, b, d].sort() });

  const removed = await c.membership(REMOVE, 2, [b, d], { sender: owner });
  assert.deepEqual(removed.reply, [0, 2, removed.messageId, 3, 1, 3]);
  assert.deepEqual(await c.hgetall(c.keys.grpmembers), { [owner]: "0||A", [a]: "0|1|L", [b]: "0|2|R", [d]: "0|2|R" });
  const meta = await c.hgetall(c.keys.grpmeta);
  assert.equal(meta.version, "3");
  assert.equal(meta.member_count, "1");
  assert.deepEqual(parseCommit((await c.hgetall(c.keys.commits))["2"]), { version: "3", audience: [owner, b, d].sort() });
  assert.deepEqual(await c.zrange(c.keys.hist), [
    [`1|${left.rest}`, 1],
    [`2|${removed.rest}`, 2],
  ]);
  assert.deepEqual(await c.lrange(c.keys.outbox), [`${c.keys.outboxRef}|1`, `${c.keys.outboxRef}|2`]);
  assert.deepEqual(Object.keys(await c.hgetall(c.keys.commits)).sort(), ["1", "2"]);
  assert.equal(await c.exists(c.keys.vpending), 0);
});

test("applyMembership: a rejoin replaces the old interval", async () => {
  const c = new Conv(fx);
  const [owner, a] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner, a]);
  await c.send(owner, 1); // 1
  await c.membership(LEAVE, 1, [a]); // 2
  await c.send(owner, 2); // 3
  const back = await c.membership(JOIN, 2, [a], { sender: owner }); // 4
  assert.deepEqual(back.reply, [0, 4, back.messageId, 3, 2, 2]);
  assert.equal((await c.hgetall(c.keys.grpmembers))[a], "3||A");
  // the CONTROL messages (2, 4) are in commits, the NORMAL ones (1, 3) in vpending at their versions
  assert.deepEqual(Object.keys(await c.hgetall(c.keys.commits)).sort(), ["2", "4"]);
  assert.deepEqual(await c.zrange(c.keys.vpending), [
    ["1", 1],
    ["3", 2],
  ]);
});

test("applyMembership: above broadcastMax members only the targets are the audience", async () => {
  const c = new Conv(fx);
  const [owner, a, b, d] = hexIds(4) as [string, string, string, string];
  await c.createGroup(owner, [owner, a, b]);

  // join: 4 members after the change > 2 -> the joiner only
  const j = await c.membership(JOIN, 1, [d], { sender: owner, broadcastMax: 2 });
  assert.deepEqual(j.reply, [0, 1, j.messageId, 2, 4, 1]);
  assert.equal((await c.hgetall(c.keys.commits))["1"], `R|2|${d}`);

  // remove: 3 members after the change > 2 -> the removed only
  const r = await c.membership(REMOVE, 2, [a], { sender: owner, broadcastMax: 2 });
  assert.deepEqual(r.reply, [0, 2, r.messageId, 3, 3, 1]);
  assert.equal((await c.hgetall(c.keys.commits))["2"], `R|3|${a}`);

  // leave: 2 members after the change = 2 (at the bound) -> post-change ACTIVE ∪ the leaver
  const l = await c.membership(LEAVE, 3, [b], { broadcastMax: 2 });
  assert.deepEqual(l.reply, [0, 3, l.messageId, 4, 2, 3]);
  assert.deepEqual(parseCommit((await c.hgetall(c.keys.commits))["3"]), { version: "4", audience: [owner, d, b].sort() });
});

test("applyMembership: at or below broadcastMax a join's audience is every post-change member", async () => {
  const c = new Conv(fx);
  const [owner, a, b, d] = hexIds(4) as [string, string, string, string];
  await c.createGroup(owner, [owner, a]);
  const j = await c.membership(JOIN, 1, [b, d], { sender: owner, broadcastMax: 4 });
  assert.deepEqual(j.reply, [0, 1, j.messageId, 2, 4, 4]);
  assert.deepEqual(parseCommit((await c.hgetall(c.keys.commits))["1"]), { version: "2", audience: [owner, a, b, d].sort() });
});

test("applyMembership: no delta while nothing is pending; one per version while a message is", async () => {
  const c = new Conv(fx);
  const [owner, a, b, d] = hexIds(4) as [string, string, string, string];
  await c.createGroup(owner, [owner, a, b]);

  await c.membership(REMOVE, 1, [b], { sender: owner }); // version 2, nothing pending
  assert.equal(await c.exists(c.keys.grpdeltas), 0);

  await c.send(a, 2); // pending at version 2
  await c.membership(JOIN, 2, [d], { sender: owner }); // version 3
  await c.membership(LEAVE, 3, [a]); // version 4
  assert.deepEqual(await c.hgetall(c.keys.grpdeltas), { "3": `1|${d}`, "4": `2|${a}` });
});

test("applyMembership: deletes grpdeltas when vpending is empty", async () => {
  const c = new Conv(fx);
  const [owner, a] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner]);
  // a leftover delta with nothing pending (e.g. written before the last message was dispatched)
  await c.client.hset(c.keys.grpdeltas, "1", `1|${hexId()}`);
  const ev = await c.membership(JOIN, 1, [a], { sender: owner });
  assert.equal(luaStatus(ev.reply), "OK");
  assert.equal(await c.exists(c.keys.grpdeltas), 0);
});

test("applyMembership: an idempotency hit returns status 1 with the existing seq and changes nothing", async () => {
  const c = new Conv(fx);
  const [owner, a] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner]);
  await c.send(owner, 1);
  const first = await c.membership(JOIN, 1, [a], { sender: owner });
  assert.deepEqual(first.reply, [0, 2, first.messageId, 2, 2, 2]);
  const before = await c.snapshot();

  // the same change retried: same idempotency id, planned at the same version 1
  const again = await c.membership(JOIN, 1, [a], { sender: owner, idem: first.idem });
  assert.deepEqual(again.reply, [LUA_STATUS.DUPLICATE, 2, first.messageId, 2, 2, 0]);
  assert.equal(luaStatus(again.reply), "DUPLICATE");
  assert.deepEqual(await c.snapshot(), before);
});

test("applyMembership: a stale version returns {-1, version} and consumes no seq", async () => {
  const c = new Conv(fx);
  const [owner, a, b] = hexIds(3) as [string, string, string];
  await c.createGroup(owner, [owner]);
  await c.membership(JOIN, 1, [a], { sender: owner });
  const before = await c.snapshot();
  for (const v of [1, 3]) {
    const r = await c.membership(JOIN, v, [b], { sender: owner });
    assert.deepEqual(r.reply, [LUA_STATUS.MEMBERSHIP_CHANGED, 2]);
    assert.equal(luaStatus(r.reply), "MEMBERSHIP_CHANGED");
  }
  assert.deepEqual(await c.snapshot(), before);
  assert.equal(await c.get(c.keys.cseq), "1");
});

test("applyMembership: a missing group returns -3 and writes nothing", async () => {
  const c = new Conv(fx);
  const r = await c.membership(JOIN, 1, [hexId()]);
  assert.deepEqual(r.reply, [LUA_STATUS.GROUP_NOT_FOUND]);
  assert.equal(luaStatus(r.reply), "GROUP_NOT_FOUND");
  for (const key of [c.keys.cseq, c.keys.hist, c.keys.commits, c.keys.idem, c.keys.grpmembers, c.keys.grpdeltas, c.keys.vpending, c.keys.outbox]) {
    assert.equal(await c.exists(key), 0, key);
  }
});

test("applyMembership: -6 when the plan no longer holds, and nothing is written", async () => {
  const c = new Conv(fx);
  const [owner, a, b, stranger] = hexIds(4) as [string, string, string, string];
  await c.createGroup(owner, [owner, a, b]);
  await c.membership(LEAVE, 1, [b]); // b LEFT, version 2
  const before = await c.snapshot();

  const cases: [number, string[], string][] = [
    [JOIN, [a], a], // already ACTIVE
    [REMOVE, [stranger], stranger], // never a member
    [LEAVE, [b], b], // already LEFT
    [REMOVE, [a, stranger].sort(), stranger], // one target fails: none is applied
  ];
  for (const [op, targets, culprit] of cases) {
    const r = await c.membership(op as 1 | 2 | 3, 2, targets, { sender: owner });
    assert.deepEqual(r.reply, [LUA_STATUS.PLAN_STALE, culprit], `op ${op} ${targets.join(",")}`);
    assert.equal(luaStatus(r.reply), "PLAN_STALE");
  }
  assert.deepEqual(await c.snapshot(), before);
});

test("applyMembership: -7 when the owner would leave or be removed, and nothing is written", async () => {
  const c = new Conv(fx);
  const [owner, a] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner, a]);
  const before = await c.snapshot();
  for (const [op, targets] of [[REMOVE, [owner]], [LEAVE, [owner]], [REMOVE, [owner, a].sort()]] as [1 | 2 | 3, string[]][]) {
    const r = await c.membership(op, 1, targets, { sender: owner });
    assert.deepEqual(r.reply, [LUA_STATUS.OWNER_IMMUTABLE]);
    assert.equal(luaStatus(r.reply), "OWNER_IMMUTABLE");
  }
  assert.deepEqual(await c.snapshot(), before);
});

test("applyMembership: a target named twice, or no target at all, is refused (-6) and writes nothing", async () => {
  const c = new Conv(fx);
  const [owner, a, b] = hexIds(3) as [string, string, string];
  await c.createGroup(owner, [owner, a]);
  const before = await c.snapshot();
  assert.deepEqual((await c.membership(JOIN, 1, [b, b], { sender: owner })).reply, [LUA_STATUS.PLAN_STALE, b]);
  assert.deepEqual((await c.membership(REMOVE, 1, [a, a], { sender: owner })).reply, [LUA_STATUS.PLAN_STALE, a]);
  assert.deepEqual((await c.membership(JOIN, 1, [], { sender: owner })).reply, [LUA_STATUS.PLAN_STALE, ""]);
  assert.deepEqual(await c.snapshot(), before);
});

test("applyMembership: a join past the size limit (ARGV[7]) is refused before anything is written; a remove is not limited", async () => {
  const c = new Conv(fx);
  const [owner, a, b, d] = hexIds(4) as [string, string, string, string];
  await c.createGroup(owner, [owner, a]);
  const before = await c.snapshot();
  // 2 members + 2 joiners = 4 > 3: refused with the count and the limit
  const over = await c.membership(JOIN, 1, [b, d], { sender: owner, maxMembers: 3 });
  assert.deepEqual(over.reply, [LUA_STATUS.GROUP_FULL, 2, 3]);
  assert.equal(luaStatus(over.reply), "GROUP_FULL");
  assert.equal(await c.snapshot(), before, "nothing written: no seq, no version, no member");
  // exactly at the limit is allowed
  const at = await c.membership(JOIN, 1, [b], { sender: owner, maxMembers: 3 });
  assert.equal(luaStatus(at.reply), "OK");
  assert.equal((await c.hgetall(c.keys.grpmeta)).member_count, "3");
  // a group already past a lowered limit may still shrink, and may not grow
  const removed = await c.membership(REMOVE, 2, [a], { sender: owner, maxMembers: 1 });
  assert.equal(luaStatus(removed.reply), "OK");
  assert.deepEqual((await c.membership(JOIN, 3, [d], { sender: owner, maxMembers: 1 })).reply, [LUA_STATUS.GROUP_FULL, 2, 1]);
});
