import { test } from "node:test";
import assert from "node:assert/strict";
import { LUA_STATUS, luaStatus } from "../../core/lua.js";
import { Conv, hexId, hexIds, useRedis } from "./helpers.js";

const fx = useRedis();

test("commitMessage: allocates seq 1, 2, … and records hist, commit, idem, outbox and vpending", async () => {
  const c = new Conv(fx);
  const [owner, b] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner, b]);

  const m1 = await c.send(owner, 1);
  assert.deepEqual(m1.reply, [LUA_STATUS.OK, 1, m1.messageId]);
  assert.equal(luaStatus(m1.reply), "OK");
  const m2 = await c.send(b, 1);
  assert.deepEqual(m2.reply, [0, 2, m2.messageId]);

  assert.equal(await c.get(c.keys.cseq), "2");
  assert.deepEqual(await c.zrange(c.keys.hist), [
    [`1|${m1.rest}`, 1],
    [`2|${m2.rest}`, 2],
  ]);
  // a group message's commit record is its vpending entry (below); commits holds control messages only
  assert.deepEqual(await c.hgetall(c.keys.commits), {});
  assert.deepEqual(await c.hgetall(c.keys.idem), { [m1.clientMessageId]: "1", [m2.clientMessageId]: "2" });
  assert.deepEqual(await c.lrange(c.keys.outbox), [`${c.keys.outboxRef}|1`, `${c.keys.outboxRef}|2`]);
  assert.deepEqual(await c.zrange(c.keys.vpending), [
    ["1", 1],
    ["2", 1],
  ]);
  assert.equal(c.keys.outboxRef, `${c.tenant.replace(/-/g, "")}|${c.group.replace(/-/g, "")}`);
});

test("commitMessage: vpending carries the version the message was frozen at", async () => {
  const c = new Conv(fx);
  const [owner, b] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner]);
  await c.send(owner, 1);
  await c.membership(1, 1, [b], { sender: owner });
  const m3 = await c.send(b, 2);
  assert.deepEqual(m3.reply, [0, 3, m3.messageId]);
  // only the CONTROL message (seq 2) has a commits entry; the NORMAL messages are RECORDED in vpending
  assert.deepEqual(Object.keys(await c.hgetall(c.keys.commits)), ["2"]);
  assert.deepEqual(await c.zrange(c.keys.vpending), [
    ["1", 1],
    ["3", 2],
  ]);
});

test("commitMessage: a duplicate client_message_id returns the existing commit and consumes no seq", async () => {
  const c = new Conv(fx);
  const [owner] = hexIds(1) as [string];
  await c.createGroup(owner, [owner]);
  const first = await c.send(owner, 1);
  await c.send(owner, 1);
  const before = await c.snapshot();

  const again = await c.send(owner, 1, { clientMessageId: first.clientMessageId });
  assert.deepEqual(again.reply, [LUA_STATUS.DUPLICATE, 1, first.messageId]);
  assert.equal(luaStatus(again.reply), "DUPLICATE");
  assert.deepEqual(await c.snapshot(), before);
  assert.equal(await c.get(c.keys.cseq), "2");
});

test("commitMessage: a duplicate is found before the version check (a retry after the version moved)", async () => {
  const c = new Conv(fx);
  const [owner, b] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner]);
  const first = await c.send(owner, 1);
  await c.membership(1, 1, [b], { sender: owner });
  const before = await c.snapshot();
  const again = await c.send(owner, 1, { clientMessageId: first.clientMessageId });
  assert.deepEqual(again.reply, [1, 1, first.messageId]);
  assert.deepEqual(await c.snapshot(), before);
});

test("commitMessage: a stale version returns {-1, currentVersion} and consumes no seq", async () => {
  const c = new Conv(fx);
  const [owner, b] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner]);
  await c.send(owner, 1);
  await c.membership(1, 1, [b], { sender: owner }); // seq 2, version 2
  const before = await c.snapshot();

  const stale = await c.send(owner, 1);
  assert.deepEqual(stale.reply, [LUA_STATUS.MEMBERSHIP_CHANGED, 2]);
  assert.equal(luaStatus(stale.reply), "MEMBERSHIP_CHANGED");
  const ahead = await c.send(owner, 3);
  assert.deepEqual(ahead.reply, [-1, 2]);
  assert.deepEqual(await c.snapshot(), before);
  assert.equal(await c.get(c.keys.cseq), "2");

  const ok = await c.send(owner, 2);
  assert.deepEqual(ok.reply, [0, 3, ok.messageId]);
});

test("commitMessage: a sender who is not a member at V gets -2 and nothing is written", async () => {
  const c = new Conv(fx);
  const [owner, b, stranger] = hexIds(3) as [string, string, string];
  await c.createGroup(owner, [owner, b]);
  await c.membership(2, 1, [b]); // b leaves: version 2, seq 1
  const before = await c.snapshot();

  for (const sender of [stranger, b]) {
    const r = await c.send(sender, 2);
    assert.deepEqual(r.reply, [LUA_STATUS.SENDER_NOT_MEMBER]);
    assert.equal(luaStatus(r.reply), "SENDER_NOT_MEMBER");
  }
  assert.deepEqual(await c.snapshot(), before);
  assert.equal(await c.get(c.keys.cseq), "1");
});

test("commitMessage: a missing group returns -3 and nothing is written", async () => {
  const c = new Conv(fx);
  const r = await c.send(hexId(), 1);
  assert.deepEqual(r.reply, [LUA_STATUS.GROUP_NOT_FOUND]);
  assert.equal(luaStatus(r.reply), "GROUP_NOT_FOUND");
  for (const key of [c.keys.cseq, c.keys.hist, c.keys.commits, c.keys.idem, c.keys.vpending, c.keys.outbox]) {
    assert.equal(await c.exists(key), 0, key);
  }
});
