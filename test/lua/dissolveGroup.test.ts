/**
 * lua/conversation/dissolveGroup-6.lua called raw (its header's KEYS and ARGV), and the writers and
 * readers it changes: after the dissolve at J every writer refuses with {-15, J} and writes nothing,
 * and every reader's visible bound (includes/visibleBounds) stops at J. Expected values are worked
 * out by hand from the scenario below; the constant-cost test watches the commands the script runs
 * (MONITOR) on a 3-member and a 20,000-member group.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { Redis } from "ioredis";
import { callScript, LUA_STATUS } from "../../core/index.js";
import { Conv, hexId, hexIds, useRedis } from "./helpers.js";

const fx = useRedis();
const JOIN = 1;
const LEAVE = 2;
const REMOVE = 3;
const CREATED_AT = 1_700_000_000_999;

/** History entry of the dissolve without its seq: payload op 1 (dissolve) | actor 0 (admin). */
function dissolveRest(messageId: string, owner: string): string {
  const payload = Buffer.concat([Buffer.from([1]), Buffer.alloc(16)]).toString("base64");
  return `${messageId}|${owner}|C|0|${CREATED_AT}|qim.group.v1|${payload}`;
}

const dissolve = (c: Conv, version: number, messageId: string, owner: string) => c.run("dissolveGroup", [version, dissolveRest(messageId, owner), c.keys.outboxRef]);

/**
 * owner, a, b from the start (version 1):
 *   1 owner | 2 b leaves (left_at 2, version 2) | 3 a | 4 dissolve (version 3)
 * seqs 1 and 3 stay RECORDED (no relay runs), so the dissolve writes its empty delta for version 3.
 */
async function dissolved() {
  const c = new Conv(fx);
  const [owner, a, b] = hexIds(3) as [string, string, string];
  await c.createGroup(owner, [owner, a, b], CREATED_AT);
  await c.send(owner, 1);
  await c.membership(LEAVE, 1, [b]);
  await c.send(a, 2);
  const members = await c.hgetall(c.keys.grpmembers);
  const messageId = hexId();
  const reply = await dissolve(c, 2, messageId, owner);
  const entries = (await c.zrange(c.keys.hist)).map(([e]) => e);
  return { c, owner, a, b, members, messageId, reply, entries };
}

test("dissolveGroup: one CONTROL message at J, dissolved_at = J, version V+1, frozen like a group message; no member entry touched", async () => {
  const { c, owner, a, b, members, messageId, reply, entries } = await dissolved();
  assert.deepEqual(reply, [LUA_STATUS.OK, 4, messageId, 3]);
  assert.deepEqual(await c.hgetall(c.keys.grpmeta), { version: "3", owner, member_count: "2", created_at: String(CREATED_AT), unread_index_from: "1", dissolved_at: "4" }, "unread_index_from: the first commit (seq 1) started the unread index");
  assert.deepEqual(await c.hgetall(c.keys.grpmembers), members, "no interval rewritten");
  assert.equal(await c.get(c.keys.cseq), "4");
  assert.equal(entries[3], `4|${dissolveRest(messageId, owner)}`);
  assert.deepEqual(await c.zrange(c.keys.vpending), [["1", 1], ["3", 2], ["4", 3]], "its commit record: vpending at the new version");
  assert.equal((await c.lrange(c.keys.outbox)).at(-1), `${c.keys.outboxRef}|4`);
  assert.deepEqual(await c.hgetall(c.keys.grpdeltas), { 2: `2|${b}`, 3: "5|" });
  // the relay: the event goes to the members (owner, a); seq 1, frozen at version 1, still to all three
  // (loadForDispatch: member budget, outbox ref, seqs; 5 items per seq, "D" = dispatched directly)
  assert.deepEqual((await c.run("loadForDispatch", [1000, c.keys.outboxRef, "4", "1"])).map(String),
    ["4", "D", entries[3], "3", [owner, a].sort().join(""), "1", "D", entries[0], "1", [owner, a, b].sort().join("")]);
});

test("dissolveGroup: with nothing pending, no delta; a stale version {-1}; no group {-3}; nothing written", async () => {
  const c = new Conv(fx);
  const [owner, a] = hexIds(2) as [string, string];
  assert.deepEqual(await dissolve(c, 1, hexId(), owner), [LUA_STATUS.GROUP_NOT_FOUND]);
  assert.equal(await c.exists(c.keys.grpmeta), 0);
  await c.createGroup(owner, [owner, a]);
  await c.membership(JOIN, 1, [hexId()], { sender: owner });
  await c.run("markCommitted", ["", 0, c.keys.outboxRef, 1]);
  const before = await c.snapshot();
  assert.deepEqual(await dissolve(c, 1, hexId(), owner), [LUA_STATUS.MEMBERSHIP_CHANGED, 2]);
  assert.equal(await c.snapshot(), before);
  assert.deepEqual((await dissolve(c, 2, hexId(), owner)).slice(0, 2), [0, 2]);
  assert.equal(await c.exists(c.keys.grpdeltas), 0);
});

test("dissolveGroup: a re-run answers {1, J, messageId, version} whatever V and writes nothing", async () => {
  const { c, owner, messageId } = await dissolved();
  const before = await c.snapshot();
  assert.deepEqual(await dissolve(c, 3, hexId(), owner), [LUA_STATUS.DUPLICATE, 4, messageId, 3]);
  assert.deepEqual(await dissolve(c, 2, hexId(), owner), [LUA_STATUS.DUPLICATE, 4, messageId, 3]);
  assert.equal(await c.snapshot(), before);
});

test("dissolved: send, add, remove, leave, transfer and a CMD to the group are refused with {-15, J}; nothing written", async () => {
  const { c, owner, a } = await dissolved();
  const before = await c.snapshot();
  assert.deepEqual((await c.send(a, 3)).raw, [0, LUA_STATUS.GROUP_DISSOLVED, 4, ""]);
  assert.deepEqual((await c.membership(JOIN, 3, [hexId()], { sender: owner })).reply, [LUA_STATUS.GROUP_DISSOLVED, 4]);
  assert.deepEqual((await c.membership(REMOVE, 3, [a], { sender: owner })).reply, [-15, 4]);
  assert.deepEqual((await c.membership(LEAVE, 3, [a])).reply, [-15, 4]);
  assert.deepEqual(await c.run("transferOwner", [3, a]), [-15, 4]);
  assert.deepEqual(await c.run("readPlan", [a]), [0, 3, owner, 2, 4, "A"]);
  // a group-sourced CMD (its channel keys live on the group's tag)
  const cmd = (name: string) => c.keys.grpmeta.replace(":grpmeta:", `:${name}:`);
  const cmdKeys = [cmd("cmdseq"), cmd("cmdhist"), cmd("cmdidem"), cmd("cmdrecent"), c.keys.grpmembers, c.keys.grpmeta];
  assert.deepEqual(await callScript(c.client, "commitCmd", cmdKeys, ["g", "x", "mid", 3, "", "eA==", "cA==", "t|2|c|", 86_400_000, 10, ""]), [-15, 4]);
  assert.equal(await c.client.exists(cmdKeys.slice(0, 4)), 0);
  assert.equal(await c.snapshot(), before);
});

test("dissolved: a retry of a message committed before the dissolve still answers its commit", async () => {
  const c = new Conv(fx);
  const [owner, a] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner, a]);
  const sent = await c.send(a, 1, { clientMessageId: hexId() });
  assert.deepEqual((await dissolve(c, 1, hexId(), owner)).slice(0, 2), [0, 2]);
  const retry = await c.send(a, 2, { clientMessageId: sent.clientMessageId, messageId: hexId() });
  assert.deepEqual(retry.reply, [LUA_STATUS.DUPLICATE, 1, sent.messageId]);
});

test("dissolved: every reader's bound stops at J (the event included); who left before keeps left_at - 1", async () => {
  const { c, owner, a, b, entries } = await dissolved();
  // a record past J that no path writes, put there by hand: what the bound keeps out
  const late = `5|${hexId()}|${owner}|N|1|${CREATED_AT}|text/plain|bGF0ZQ==`;
  await c.client.zadd(c.keys.hist, 5, late);

  assert.deepEqual(await c.run("readHistory", [a, 0, 100]), [0, 0, -1, "A", 1, ...entries]);
  assert.deepEqual(await c.run("readHistory", [b, 0, 100]), [0, 0, 2, "L", 1, entries[0]]);
  // a: head = the dissolve event; unread = seq 1 (owner's; seq 3 is a's own, 4 a control message)
  assert.deepEqual(await c.run("conversationSummary", [a, 200, 0, 0]), [0, 0, -1, "A", 0, entries[3], 1, 1]);
  assert.deepEqual(await c.run("conversationSummary", [b, 200, 0, 0]), [0, 0, 2, "L", 0, entries[0], 1, 1]);
  const recompute = (u: string) => callScript(c.client, "recomputeUnread", [c.keys.grpmembers, c.keys.hist, c.keys.readseq, c.keys.grpmeta, c.keys.unreadidx], [u, 0, 0, 200]);
  const [, , , , , headSeq, , , unread] = await recompute(owner);
  assert.deepEqual({ headSeq, unread }, { headSeq: 4, unread: 1 }, "owner: a's seq 3 only (seq 1 is the owner's own, 4 a control message, 5 past J)");
  assert.deepEqual((await recompute(a)).slice(5, 10), [4, entries[3]!.split("|")[1], CREATED_AT, 1, 1]);
  assert.deepEqual(await c.run("markRead", [a, 99]), [0, 4]);
  assert.deepEqual(await c.run("markRead", [b, 99]), [0, 1]);
});

/** Every command a call runs on the server (scripts' commands included), in order, by MONITOR. */
async function commandsOf(c: Conv, call: () => Promise<unknown>): Promise<string[][]> {
  const base = new Redis({ host: fx.server.host, port: fx.server.port, lazyConnect: true });
  const monitor = await base.monitor();
  const seen: string[][] = [];
  const marker = `end-${hexId()}`;
  const done = new Promise<void>((resolve) => monitor.on("monitor", (_time: string, args: string[]) => {
    if (args[0]?.toLowerCase() === "echo" && args[1] === marker) resolve();
    else seen.push(args);
  }));
  try {
    await call();
    await c.client.echo(marker);
    await done;
  } finally {
    monitor.disconnect();
    base.disconnect();
  }
  return seen;
}

test("dissolveGroup: constant cost — the same commands for 3 and 20,000 members, none of them on the member table", async () => {
  const shapes: string[][] = [];
  for (const size of [3, 20_000]) {
    const c = new Conv(fx);
    const users = hexIds(size);
    const owner = users[0]!;
    await c.createGroup(owner, users);
    assert.equal(await c.client.hlen(c.keys.grpmembers), size);
    const seen = await commandsOf(c, () => dissolve(c, 1, hexId(), owner));
    const inScript = seen.filter((args) => !/^eval/i.test(args[0]!));
    assert.ok(inScript.length > 0, "MONITOR saw the script's commands");
    assert.deepEqual(inScript.filter((args) => args.includes(c.keys.grpmembers)), [], `size ${size}: nothing touched the member table`);
    assert.deepEqual(inScript.filter((args) => /^(hgetall|hscan|hkeys|hvals)$/i.test(args[0]!)), [], `size ${size}: no whole-hash read`);
    shapes.push(inScript.map((args) => args[0]!.toLowerCase()));
    assert.equal((await c.hgetall(c.keys.grpmeta)).dissolved_at, "1");
  }
  assert.deepEqual(shapes[1], shapes[0], "the same commands whatever the group's size");
});
