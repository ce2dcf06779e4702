import { test } from "node:test";
import assert from "node:assert/strict";
import { LUA_STATUS, luaStatus } from "../../core/index.js";
import { Conv, hexId, hexIds, idemEntry, useRedis } from "./helpers.js";

const fx = useRedis();

test("commitMessages: a batch of one allocates seq 1, 2, … and records hist, idem, outbox and vpending", async () => {
  const c = new Conv(fx);
  const [owner, b] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner, b]);

  const m1 = await c.send(owner, 1);
  assert.deepEqual(m1.raw, [0, LUA_STATUS.OK, 1, m1.messageId]);
  assert.deepEqual(m1.reply, [LUA_STATUS.OK, 1, m1.messageId]);
  assert.equal(luaStatus(m1.reply), "OK");
  const m2 = await c.send(b, 1);
  assert.deepEqual(m2.raw, [0, 0, 2, m2.messageId]);

  assert.equal(await c.get(c.keys.cseq), "2");
  assert.deepEqual(await c.zrange(c.keys.hist), [
    [`1|${m1.rest}`, 1],
    [`2|${m2.rest}`, 2],
  ]);
  // a group message's commit record is its vpending entry (below); commits holds control messages only
  assert.deepEqual(await c.hgetall(c.keys.commits), {});
  assert.deepEqual(await c.hgetall(c.keys.idem), { [m1.clientMessageId]: idemEntry(1, 1, owner), [m2.clientMessageId]: idemEntry(2, 1, b) });
  assert.deepEqual(await c.lrange(c.keys.outbox), [`${c.keys.outboxRef}|1`, `${c.keys.outboxRef}|2`]);
  assert.deepEqual(await c.zrange(c.keys.vpending), [
    ["1", 1],
    ["2", 1],
  ]);
  assert.equal(c.keys.outboxRef, `${c.tenant.replace(/-/g, "")}|${c.group.replace(/-/g, "")}`);
});

test("commitMessages: an empty batch answers {0} and writes nothing", async () => {
  const c = new Conv(fx);
  const [owner] = hexIds(1) as [string];
  await c.createGroup(owner, [owner]);
  const before = await c.snapshot();
  const { raw, messages } = await c.sendBatch(1, []);
  assert.deepEqual(raw, [0]);
  assert.deepEqual(messages, []);
  assert.deepEqual(await c.snapshot(), before);
});

test("commitMessages: a batch of 3 gets consecutive seqs in ARGV order, written with the batch's version", async () => {
  const c = new Conv(fx);
  const [owner, a, b] = hexIds(3) as [string, string, string];
  await c.createGroup(owner, [owner]);
  const m1 = await c.send(owner, 1); // seq 1 at version 1
  await c.membership(1, 1, [a, b], { sender: owner }); // seq 2, version 2
  const commitsBefore = await c.hgetall(c.keys.commits);
  const histBefore = await c.zrange(c.keys.hist);
  const idemBefore = await c.hgetall(c.keys.idem);
  assert.deepEqual(histBefore.map(([, s]) => s), [1, 2]);
  assert.equal(histBefore[0]![0], `1|${m1.rest}`);
  assert.equal(idemBefore[m1.clientMessageId], idemEntry(1, 1, owner));
  assert.equal(Object.keys(idemBefore).length, 2); // m1 and the membership event

  // senders deliberately not in sorted order: the seqs follow ARGV, not the senders
  const { raw, messages } = await c.sendBatch(2, [{ sender: b }, { sender: owner, countsUnread: false }, { sender: a }]);
  const [x, y, z] = messages as [(typeof messages)[0], (typeof messages)[0], (typeof messages)[0]];
  assert.deepEqual(raw, [0, 0, 3, x.messageId, 0, 4, y.messageId, 0, 5, z.messageId]);
  assert.deepEqual(x.reply, [0, 3, x.messageId]);
  assert.deepEqual(y.reply, [0, 4, y.messageId]);
  assert.deepEqual(z.reply, [0, 5, z.messageId]);

  assert.equal(await c.get(c.keys.cseq), "5");
  assert.deepEqual(await c.zrange(c.keys.hist), [
    ...histBefore,
    [`3|${x.rest}`, 3],
    [`4|${y.rest}`, 4],
    [`5|${z.rest}`, 5],
  ]);
  assert.deepEqual(await c.hgetall(c.keys.idem), {
    ...idemBefore,
    [x.clientMessageId]: idemEntry(3, 2, b),
    [y.clientMessageId]: idemEntry(4, 2, owner, false),
    [z.clientMessageId]: idemEntry(5, 2, a),
  });
  const ref = c.keys.outboxRef;
  assert.deepEqual(await c.lrange(c.keys.outbox), [`${ref}|1`, `${ref}|2`, `${ref}|3`, `${ref}|4`, `${ref}|5`]);
  assert.deepEqual(await c.zrange(c.keys.vpending), [
    ["1", 1],
    ["3", 2],
    ["4", 2],
    ["5", 2],
  ]);
  // the batch wrote no commits entry (only the CONTROL message at seq 2 has one)
  assert.deepEqual(await c.hgetall(c.keys.commits), commitsBefore);
  assert.deepEqual(Object.keys(commitsBefore), ["2"]);
});

test("commitMessages: a batch of 3 into a fresh group writes exactly its 3 entries per key, commits stays empty", async () => {
  const c = new Conv(fx);
  const [owner, b] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner, b]);
  const { messages } = await c.sendBatch(1, [{ sender: owner }, { sender: b }, { sender: owner }]);
  assert.deepEqual(messages.map((m) => m.reply), messages.map((m, i) => [0, i + 1, m.messageId]));

  assert.equal(await c.get(c.keys.cseq), "3");
  assert.deepEqual(await c.zrange(c.keys.hist), messages.map((m, i) => [`${i + 1}|${m.rest}`, i + 1]));
  assert.deepEqual(await c.hgetall(c.keys.idem), Object.fromEntries(messages.map((m, i) => [m.clientMessageId, idemEntry(i + 1, 1, [owner, b, owner][i]!)])));
  assert.deepEqual(await c.lrange(c.keys.outbox), [1, 2, 3].map((s) => `${c.keys.outboxRef}|${s}`));
  assert.deepEqual(await c.zrange(c.keys.vpending), [
    ["1", 1],
    ["2", 1],
    ["3", 1],
  ]);
  assert.equal(await c.exists(c.keys.commits), 0);
});

test("commitMessages: vpending carries the version the message was frozen at", async () => {
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

test("commitMessages: a duplicate client_message_id returns the existing commit and consumes no seq", async () => {
  const c = new Conv(fx);
  const [owner] = hexIds(1) as [string];
  await c.createGroup(owner, [owner]);
  const first = await c.send(owner, 1);
  await c.send(owner, 1);
  const before = await c.snapshot();

  const again = await c.send(owner, 1, { clientMessageId: first.clientMessageId });
  assert.deepEqual(again.raw, [0, LUA_STATUS.DUPLICATE, 1, first.messageId]);
  assert.equal(luaStatus(again.reply), "DUPLICATE");
  assert.deepEqual(await c.snapshot(), before);
  assert.equal(await c.get(c.keys.cseq), "2");
});

test("commitMessages: a committed duplicate inside a batch consumes no seq; the others commit without a gap", async () => {
  const c = new Conv(fx);
  const [owner, b] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner, b]);
  const first = await c.send(owner, 1); // seq 1
  const { messages } = await c.sendBatch(1, [{ sender: b }, { sender: owner, clientMessageId: first.clientMessageId }, { sender: owner }]);
  const [x, dup, z] = messages as [(typeof messages)[0], (typeof messages)[0], (typeof messages)[0]];
  assert.deepEqual(x.reply, [0, 2, x.messageId]);
  assert.deepEqual(dup.reply, [1, 1, first.messageId]);
  assert.deepEqual(z.reply, [0, 3, z.messageId]);

  assert.equal(await c.get(c.keys.cseq), "3");
  assert.deepEqual(await c.zrange(c.keys.hist), [
    [`1|${first.rest}`, 1],
    [`2|${x.rest}`, 2],
    [`3|${z.rest}`, 3],
  ]);
  assert.deepEqual(await c.hgetall(c.keys.idem), { [first.clientMessageId]: idemEntry(1, 1, owner), [x.clientMessageId]: idemEntry(2, 1, b), [z.clientMessageId]: idemEntry(3, 1, owner) });
  assert.deepEqual(await c.lrange(c.keys.outbox), [1, 2, 3].map((s) => `${c.keys.outboxRef}|${s}`));
  assert.deepEqual(await c.zrange(c.keys.vpending), [
    ["1", 1],
    ["2", 1],
    ["3", 1],
  ]);
  assert.equal(await c.exists(c.keys.commits), 0);
});

test("commitMessages: a duplicate is found before the version check (a retry after the version moved)", async () => {
  const c = new Conv(fx);
  const [owner, b] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner]);
  const first = await c.send(owner, 1); // seq 1
  await c.membership(1, 1, [b], { sender: owner }); // seq 2, version 2
  const before = await c.snapshot();

  // alone, at the stale V
  const again = await c.send(owner, 1, { clientMessageId: first.clientMessageId });
  assert.deepEqual(again.raw, [0, LUA_STATUS.DUPLICATE, 1, first.messageId]);
  assert.deepEqual(await c.snapshot(), before);

  // with fresh messages at the stale V: the duplicate still answers 1, the others -1, nothing written
  const { raw, messages } = await c.sendBatch(1, [{ sender: owner }, { sender: owner, clientMessageId: first.clientMessageId }, { sender: b }]);
  assert.deepEqual(raw, [0, -1, 2, "", 1, 1, first.messageId, -1, 2, ""]);
  assert.equal(luaStatus(messages[0]!.reply), "MEMBERSHIP_CHANGED");
  assert.equal(luaStatus(messages[1]!.reply), "DUPLICATE");
  assert.deepEqual(await c.snapshot(), before);
  assert.equal(await c.get(c.keys.cseq), "2");

  // at a version of a group that is missing altogether, a committed duplicate still answers 1
  const other = new Conv(fx);
  await other.client.hset(other.keys.idem, first.clientMessageId, "7");
  const orphan = await other.send(owner, 1, { clientMessageId: first.clientMessageId });
  assert.deepEqual(orphan.raw, [0, 1, 7, ""]);
});

test("commitMessages: the same client_message_id twice in one batch commits once; the second answers 1 with the first's seq", async () => {
  const c = new Conv(fx);
  const [owner, b] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner, b]);
  await c.send(owner, 1); // seq 1
  const cmid = hexId();
  const { raw, messages } = await c.sendBatch(1, [
    { sender: owner, clientMessageId: cmid },
    { sender: b },
    { sender: owner, clientMessageId: cmid }, // a client retry that reached the same batch
  ]);
  const [x, y, retry] = messages as [(typeof messages)[0], (typeof messages)[0], (typeof messages)[0]];
  assert.deepEqual(raw, [0, 0, 2, x.messageId, 0, 3, y.messageId, 1, 2, x.messageId]);
  assert.equal(luaStatus(retry.reply), "DUPLICATE");
  assert.notEqual(retry.messageId, x.messageId, "the retry carried a messageId of its own; the answer is the first's");

  assert.equal(await c.get(c.keys.cseq), "3");
  const hist = await c.zrange(c.keys.hist);
  assert.deepEqual(hist.slice(1), [
    [`2|${x.rest}`, 2],
    [`3|${y.rest}`, 3],
  ]);
  assert.ok(!hist.some(([m]) => m.includes(retry.messageId)), "the retry's entry is not in history");
  const idem = await c.hgetall(c.keys.idem);
  assert.equal(Object.keys(idem).length, 3);
  assert.equal(idem[cmid], idemEntry(2, 1, owner));
  assert.equal(idem[y.clientMessageId], idemEntry(3, 1, b));
  assert.deepEqual(await c.lrange(c.keys.outbox), [1, 2, 3].map((s) => `${c.keys.outboxRef}|${s}`));
  assert.deepEqual(await c.zrange(c.keys.vpending), [
    ["1", 1],
    ["2", 1],
    ["3", 1],
  ]);
  assert.equal(await c.exists(c.keys.commits), 0);

  // and a later batch carrying it again finds the commit
  const later = await c.send(owner, 1, { clientMessageId: cmid });
  assert.deepEqual(later.reply, [1, 2, x.messageId]);
  assert.equal(await c.get(c.keys.cseq), "3");
});

test("commitMessages: a stale version refuses every non-duplicate message with the current version, writing nothing", async () => {
  const c = new Conv(fx);
  const [owner, b] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner]);
  await c.send(owner, 1); // seq 1
  await c.membership(1, 1, [b], { sender: owner }); // seq 2, version 2
  const before = await c.snapshot();

  const stale = await c.send(owner, 1);
  assert.deepEqual(stale.raw, [0, LUA_STATUS.MEMBERSHIP_CHANGED, 2, ""]);
  assert.equal(luaStatus(stale.reply), "MEMBERSHIP_CHANGED");

  for (const v of [1, 3]) {
    // behind and ahead; a non-member sender is refused with -1 too (the version check comes first)
    const { raw } = await c.sendBatch(v, [{ sender: owner }, { sender: b }, { sender: hexId() }]);
    assert.deepEqual(raw, [0, -1, 2, "", -1, 2, "", -1, 2, ""], `V ${v}`);
  }
  assert.deepEqual(await c.snapshot(), before);
  assert.equal(await c.get(c.keys.cseq), "2");

  const { messages } = await c.sendBatch(2, [{ sender: owner }, { sender: b }]);
  assert.deepEqual(messages.map((m) => m.reply), [
    [0, 3, messages[0]!.messageId],
    [0, 4, messages[1]!.messageId],
  ]);
});

test("commitMessages: a non-member sender in the middle of a batch gets -2; the others commit with consecutive seqs", async () => {
  const c = new Conv(fx);
  const [owner, b, d, stranger] = hexIds(4) as [string, string, string, string];
  await c.createGroup(owner, [owner, b, d]);
  await c.membership(2, 1, [b]); // b leaves: seq 1, version 2

  const { raw, messages } = await c.sendBatch(2, [{ sender: owner }, { sender: stranger }, { sender: d }, { sender: b }, { sender: owner }]);
  const [m1, , m3, , m5] = messages as [(typeof messages)[0], (typeof messages)[0], (typeof messages)[0], (typeof messages)[0], (typeof messages)[0]];
  assert.deepEqual(raw, [0, 0, 2, m1.messageId, -2, 0, "", 0, 3, m3.messageId, -2, 0, "", 0, 4, m5.messageId]);
  assert.equal(luaStatus(messages[1]!.reply), "SENDER_NOT_MEMBER");
  assert.equal(luaStatus(messages[3]!.reply), "SENDER_NOT_MEMBER");

  assert.equal(await c.get(c.keys.cseq), "4");
  assert.deepEqual((await c.zrange(c.keys.hist)).slice(1), [
    [`2|${m1.rest}`, 2],
    [`3|${m3.rest}`, 3],
    [`4|${m5.rest}`, 4],
  ]);
  const idem = await c.hgetall(c.keys.idem);
  assert.equal(Object.keys(idem).length, 4); // the leave's idempotency id and the 3 accepted
  assert.deepEqual([idem[m1.clientMessageId], idem[m3.clientMessageId], idem[m5.clientMessageId]], [idemEntry(2, 2, owner), idemEntry(3, 2, d), idemEntry(4, 2, owner)]);
  assert.equal(idem[messages[1]!.clientMessageId], undefined);
  assert.equal(idem[messages[3]!.clientMessageId], undefined);
  assert.deepEqual(await c.lrange(c.keys.outbox), [1, 2, 3, 4].map((s) => `${c.keys.outboxRef}|${s}`));
  assert.deepEqual(await c.zrange(c.keys.vpending), [
    ["2", 2],
    ["3", 2],
    ["4", 2],
  ]);
  assert.deepEqual(Object.keys(await c.hgetall(c.keys.commits)), ["1"]); // the leave's only
});

test("commitMessages: a batch of only non-members gets -2 each and writes nothing", async () => {
  const c = new Conv(fx);
  const [owner, b, stranger] = hexIds(3) as [string, string, string];
  await c.createGroup(owner, [owner, b]);
  await c.membership(2, 1, [b]); // b leaves: version 2, seq 1
  const before = await c.snapshot();

  const { raw } = await c.sendBatch(2, [{ sender: stranger }, { sender: b }]);
  assert.deepEqual(raw, [0, LUA_STATUS.SENDER_NOT_MEMBER, 0, "", -2, 0, ""]);
  assert.deepEqual(await c.snapshot(), before);
  assert.equal(await c.get(c.keys.cseq), "1");
});

test("commitMessages: a missing group answers -3 for each message and writes nothing", async () => {
  const c = new Conv(fx);
  const r = await c.send(hexId(), 1);
  assert.deepEqual(r.raw, [0, LUA_STATUS.GROUP_NOT_FOUND, 0, ""]);
  assert.equal(luaStatus(r.reply), "GROUP_NOT_FOUND");

  const { raw } = await c.sendBatch(1, [{ sender: hexId() }, { sender: hexId() }, { sender: hexId() }]);
  assert.deepEqual(raw, [0, -3, 0, "", -3, 0, "", -3, 0, ""]);
  for (const key of [c.keys.cseq, c.keys.hist, c.keys.commits, c.keys.idem, c.keys.vpending, c.keys.outbox, c.keys.grpmeta, c.keys.grpmembers]) {
    assert.equal(await c.exists(key), 0, key);
  }
});

test("commitMessages: a duplicate whose history entry was trimmed answers 1 with its seq and messageId \"\"", async () => {
  const c = new Conv(fx);
  const [owner] = hexIds(1) as [string];
  await c.createGroup(owner, [owner]);
  const first = await c.send(owner, 1); // seq 1
  const second = await c.send(owner, 1); // seq 2
  await c.client.zremrangebyscore(c.keys.hist, 1, 1); // history retention dropped seq 1
  const before = await c.snapshot();

  const again = await c.send(owner, 1, { clientMessageId: first.clientMessageId });
  assert.deepEqual(again.raw, [0, LUA_STATUS.DUPLICATE, 1, ""]);
  assert.deepEqual(await c.snapshot(), before);

  // in a batch, next to a fresh message and a duplicate whose entry is still there
  const { raw, messages } = await c.sendBatch(1, [
    { sender: owner, clientMessageId: first.clientMessageId },
    { sender: owner },
    { sender: owner, clientMessageId: second.clientMessageId },
  ]);
  assert.deepEqual(raw, [0, 1, 1, "", 0, 3, messages[1]!.messageId, 1, 2, second.messageId]);
  assert.equal(await c.get(c.keys.cseq), "3");
  assert.deepEqual(await c.zrange(c.keys.hist), [
    [`2|${second.rest}`, 2],
    [`3|${messages[1]!.rest}`, 3],
  ]);
});

test("commitMessages: a refused message and its in-batch repeat both answer messageId \"\"", async () => {
  const c = new Conv(fx);
  const [owner, stranger] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner]);
  const x = hexId();
  const notMember = await c.sendBatch(1, [{ sender: stranger, clientMessageId: x }, { sender: stranger, clientMessageId: x }]);
  assert.deepEqual(notMember.raw, [0, -2, 0, "", -2, 0, ""]);
  const stale = await c.sendBatch(9, [{ sender: owner, clientMessageId: x }, { sender: owner, clientMessageId: x }]);
  assert.deepEqual(stale.raw, [0, -1, 1, "", -1, 1, ""]);
});

test("commitMessages: a malformed argument list is an error reply and consumes no seq", async () => {
  const c = new Conv(fx);
  const [owner] = hexIds(1) as [string];
  await c.createGroup(owner, [owner]);
  await c.send(owner, 1);
  const before = await c.snapshot();
  await assert.rejects(c.run("commitMessages", [1, c.keys.outboxRef, hexId(), owner]), /ARGV is V, ref, then triples/);
  const tooMany: string[] = [];
  for (let i = 0; i < 129; i++) tooMany.push(hexId(), owner, `${hexId()}|${owner}|N|1|1|text/plain|eA==`);
  await assert.rejects(c.run("commitMessages", [1, c.keys.outboxRef, ...tooMany]), /at most 128 messages/);
  assert.deepEqual(await c.snapshot(), before);
});

test("commitMessages: a client_message_id reused with other content answers -14 with the holder's seq; nothing written", async () => {
  const c = new Conv(fx);
  const [owner, b] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner, b]);
  const first = await c.send(owner, 1); // seq 1
  const before = await c.snapshot();
  // another sender is other content; so is the same sender's entry with other countsUnread
  const other = await c.send(b, 1, { clientMessageId: first.clientMessageId });
  assert.deepEqual(other.raw, [0, LUA_STATUS.IDEMPOTENCY_CONFLICT, 1, ""]);
  const flag = await c.send(owner, 1, { clientMessageId: first.clientMessageId, countsUnread: false });
  assert.deepEqual(flag.raw, [0, -14, 1, ""]);
  assert.deepEqual(await c.snapshot(), before);
  assert.equal(await c.get(c.keys.cseq), "1");
  // the same content under a new messageId (a client retry) is still the duplicate
  const retry = await c.send(owner, 1, { clientMessageId: first.clientMessageId });
  assert.deepEqual(retry.raw, [0, LUA_STATUS.DUPLICATE, 1, first.messageId]);
});

test("commitMessages: within one batch, the same id with other content is -14 (seq 0); the first commits", async () => {
  const c = new Conv(fx);
  const [owner, b] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner, b]);
  const cmid = hexId();
  const { raw, messages } = await c.sendBatch(1, [{ sender: owner, clientMessageId: cmid }, { sender: b, clientMessageId: cmid }, { sender: b }]);
  assert.deepEqual(raw, [0, 0, 1, messages[0]!.messageId, -14, 0, "", 0, 2, messages[2]!.messageId]);
  assert.equal(await c.get(c.keys.cseq), "2");
  assert.equal((await c.hgetall(c.keys.idem))[cmid], idemEntry(1, 1, owner));
});

test("commitMessages: an idempotency entry written before digests (\"seq\" alone) answers any content as the duplicate", async () => {
  const c = new Conv(fx);
  const [owner, b] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner, b]);
  const first = await c.send(owner, 1); // seq 1
  await c.client.hset(c.keys.idem, first.clientMessageId, "1");
  const before = await c.snapshot();
  const other = await c.send(b, 1, { clientMessageId: first.clientMessageId });
  assert.deepEqual(other.raw, [0, 1, 1, first.messageId]);
  assert.deepEqual(await c.snapshot(), before);
});

test("commitMessages: the unread index gets \"seq|sender|mentions\" of each accepted message that counts, and unread_index_from the first seq once", async () => {
  const c = new Conv(fx);
  const [owner, b, u] = hexIds(3) as [string, string, string];
  await c.createGroup(owner, [owner, b]);
  const cmid = hexId();
  const mention = `${hexId()}|${b}|N|1|1700000000000|text/plain|aGk=|${owner}${u}`;
  const { raw } = await c.sendBatch(1, [
    { sender: owner, clientMessageId: cmid }, // 1
    { sender: b, countsUnread: false }, // 2: does not count, not indexed
    { sender: u }, // not a member: refused, nothing
    { sender: owner, clientMessageId: cmid }, // a duplicate of 1
  ]);
  assert.deepEqual([raw[1], raw[4], raw[7], raw[10]], [0, 0, LUA_STATUS.SENDER_NOT_MEMBER, 1]);
  await c.run("commitMessages", [1, c.keys.outboxRef, hexId(), b, mention]); // 3: names owner and u
  assert.deepEqual(await c.zrange(c.keys.unreadidx), [[`1|${owner}|`, 1], [`3|${b}|${owner}${u}`, 3]]);
  // set by the first commit, kept by later ones
  assert.equal((await c.hgetall(c.keys.grpmeta)).unread_index_from, "1");
});
