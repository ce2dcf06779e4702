import { test } from "node:test";
import assert from "node:assert/strict";
import { LUA_STATUS, luaStatus } from "../../core/index.js";
import { Conv, fanoutOf, hexId, hexIds, splitSorted, useRedis } from "./helpers.js";

const fx = useRedis();

const JOIN = 1;
const LEAVE = 2;
const REMOVE = 3;

type Group = [string, string, string, string, string];

/** The reply's 5-item groups: seq, state, entry, version, audience ("=" resolved to the audience of the "D" item before it). */
function groups(reply: unknown[]): Group[] {
  assert.equal(reply.length % 5, 0);
  const out: Group[] = [];
  let last: string | null = null;
  for (let i = 0; i < reply.length; i += 5) {
    const g = reply.slice(i, i + 5).map(String) as Group;
    if (g[1] === "D" && g[4] === "=") {
      assert.notEqual(last, null, `seq ${g[0]}: "=" with no audience before it`);
      g[4] = last!;
    } else if (g[1] === "D") {
      last = g[4];
    }
    out.push(g);
  }
  return out;
}

test("loadForDispatch: an audience the item before it answered comes as \"=\", once per run of equal audiences", async () => {
  const c = new Conv(fx);
  const [owner, a, b] = hexIds(3) as [string, string, string];
  await c.createGroup(owner, [owner, a]);
  const m1 = await c.send(owner, 1); // seq 1 at version 1
  const m2 = await c.send(a, 1); // seq 2 at version 1
  await c.membership(JOIN, 1, [b], { sender: owner }); // seq 3, version 2 (explicit audience)
  const m4 = await c.send(owner, 2); // seq 4 at version 2
  const m5 = await c.send(b, 2); // seq 5 at version 2
  const raw = (await load(c, [1, 2, 4, 5])).map(String);
  // by hand: v1 = {owner, a}, v2 = {owner, a, b}
  assert.deepEqual(raw, [
    "1", "D", `1|${m1.rest}`, "1", [owner, a].sort().join(""),
    "2", "D", `2|${m2.rest}`, "1", "=",
    "4", "D", `4|${m4.rest}`, "2", [owner, a, b].sort().join(""),
    "5", "D", `5|${m5.rest}`, "2", "=",
  ]);
  // a control message between them answers its own audience (the commit record's); the message
  // after it is "=" only when its audience is that very string
  const commits = await c.hgetall(c.keys.commits);
  const eventAud = commits["3"]!.slice("R|2|".length);
  const v2 = [owner, a, b].sort().join("");
  const mixed = (await load(c, [2, 3, 4])).map(String);
  assert.deepEqual([mixed[4], mixed[9], mixed[14]], [[owner, a].sort().join(""), eventAud, eventAud === v2 ? "=" : v2]);
});

/** loadForDispatch of `seqs` with the member budget `budget` (the engine's is 1,000). */
function load(c: Conv, seqs: (string | number)[], budget = 1000): Promise<unknown[]> {
  return c.run("loadForDispatch", [budget, c.keys.outboxRef, ...seqs]);
}

test("loadForDispatch: a message frozen at an older version expands to the members at that version", async () => {
  const c = new Conv(fx);
  const [owner, a, b, d] = hexIds(4) as [string, string, string, string];
  await c.createGroup(owner, [owner, a, b]);
  const m1 = await c.send(owner, 1); // seq 1 at version 1
  const join = await c.membership(JOIN, 1, [d], { sender: owner }); // seq 2, version 2
  const remove = await c.membership(REMOVE, 2, [b], { sender: owner }); // seq 3, version 3
  const m4 = await c.send(a, 3); // seq 4 at version 3
  assert.deepEqual(await c.hgetall(c.keys.grpdeltas), { "2": `1|${d}`, "3": `3|${b}` });

  // commit records: the CONTROL messages in commits, the NORMAL ones in vpending at their frozen version
  const commits = await c.hgetall(c.keys.commits);
  assert.deepEqual(Object.keys(commits).sort(), ["2", "3"]);
  assert.deepEqual(await c.zrange(c.keys.vpending), [
    ["1", 1],
    ["4", 3],
  ]);
  const before = await c.snapshot();

  const reply = await load(c, [1, 2, 3, 4]);
  const [g1, g2, g3, g4] = groups(reply);
  assert.deepEqual(g1, ["1", "D", `1|${m1.rest}`, "1", [owner, a, b].sort().join("")]);
  // CONTROL messages: the explicit audience of the commit record, verbatim
  assert.deepEqual(g2, ["2", "D", `2|${join.rest}`, "2", commits["2"]!.slice("R|2|".length)]);
  assert.deepEqual(splitSorted(g2[4]), [owner, a, b, d].sort());
  assert.deepEqual(g3, ["3", "D", `3|${remove.rest}`, "3", commits["3"]!.slice("R|3|".length)]);
  assert.deepEqual(splitSorted(g3[4]), [owner, a, b, d].sort());
  assert.deepEqual(g4, ["4", "D", `4|${m4.rest}`, "3", [owner, a, d].sort().join("")]);
  // reading changes nothing
  assert.deepEqual(await c.snapshot(), before);
});

test("loadForDispatch: leave and rejoin while pending; each version expands on its own, in ARGV order", async () => {
  const c = new Conv(fx);
  const [owner, a] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner, a]);
  const m1 = await c.send(owner, 1); // seq 1 at version 1: {owner, a}
  await c.membership(LEAVE, 1, [a]); // seq 2, version 2
  const m3 = await c.send(owner, 2); // seq 3 at version 2: {owner}
  await c.membership(JOIN, 2, [a], { sender: owner }); // seq 4, version 3
  const m5 = await c.send(a, 3); // seq 5 at version 3: {owner, a}
  // RECORDED: the CONTROL messages in commits, the NORMAL ones in vpending
  assert.deepEqual(Object.keys(await c.hgetall(c.keys.commits)).sort(), ["2", "4"]);
  assert.deepEqual(await c.zrange(c.keys.vpending), [
    ["1", 1],
    ["3", 2],
    ["5", 3],
  ]);
  const before = await c.snapshot();

  const [g3, g1, g5] = groups(await load(c, [3, 1, 5]));
  assert.deepEqual(g3, ["3", "D", `3|${m3.rest}`, "2", owner]);
  assert.deepEqual(g1, ["1", "D", `1|${m1.rest}`, "1", [owner, a].sort().join("")]);
  assert.deepEqual(g5, ["5", "D", `5|${m5.rest}`, "3", [owner, a].sort().join("")]);
  // reading changes nothing (commits, vpending, deltas, history, outbox … all as they were)
  assert.deepEqual(await c.snapshot(), before);
});

test("loadForDispatch: a message at the current version needs no delta", async () => {
  const c = new Conv(fx);
  const [owner, a, b] = hexIds(3) as [string, string, string];
  await c.createGroup(owner, [owner, a, b]);
  await c.membership(REMOVE, 1, [b], { sender: owner }); // version 2, nothing pending: no delta
  const m = await c.send(a, 2);
  assert.equal(await c.exists(c.keys.grpdeltas), 0);
  assert.deepEqual(groups(await load(c, [2])), [["2", "D", `2|${m.rest}`, "2", [owner, a].sort().join("")]]);
});

test("loadForDispatch: a seq no longer RECORDED (or never recorded) gives an empty entry", async () => {
  const c = new Conv(fx);
  const [owner] = hexIds(1) as [string];
  await c.createGroup(owner, [owner]);
  await c.send(owner, 1);
  const m2 = await c.send(owner, 1);
  assert.equal(await c.run("markCommitted", ["", 0, c.keys.outboxRef, 1, 1]).then((r) => r[0]), 1);
  assert.deepEqual(await c.zrange(c.keys.vpending), [["2", 1]]);
  assert.equal(await c.exists(c.keys.commits), 0);

  assert.deepEqual(groups(await load(c, [1, 2, 99])), [
    ["1", "", "", "0", ""],
    ["2", "D", `2|${m2.rest}`, "1", owner],
    ["99", "", "", "0", ""],
  ]);
});

test("loadForDispatch: a seq is RECORDED only through its commit record (commits for CONTROL, vpending for NORMAL)", async () => {
  const c = new Conv(fx);
  const [owner, a] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner]);
  const m1 = await c.send(owner, 1); // seq 1 at version 1 (vpending)
  const join = await c.membership(JOIN, 1, [a], { sender: owner }); // seq 2, version 2 (commits)
  const m3 = await c.send(a, 2); // seq 3 at version 2 (vpending)
  const commits = await c.hgetall(c.keys.commits);
  assert.deepEqual(Object.keys(commits), ["2"]);
  assert.deepEqual(groups(await load(c, [1, 2, 3])), [
    ["1", "D", `1|${m1.rest}`, "1", owner],
    ["2", "D", `2|${join.rest}`, "2", commits["2"]!.slice("R|2|".length)],
    ["3", "D", `3|${m3.rest}`, "2", [owner, a].sort().join("")],
  ]);

  // without its vpending entry a NORMAL message is COMMITTED, though its history entry stays
  await c.client.zrem(c.keys.vpending, "1");
  // without its commits entry a CONTROL message is COMMITTED, though its history entry stays
  await c.client.hdel(c.keys.commits, "2");
  assert.equal((await c.zrange(c.keys.hist)).length, 3);
  assert.deepEqual(groups(await load(c, [1, 2, 3])), [
    ["1", "", "", "0", ""],
    ["2", "", "", "0", ""],
    ["3", "D", `3|${m3.rest}`, "2", [owner, a].sort().join("")],
  ]);
});

test("loadForDispatch: a missing delta returns {-8, version}", async () => {
  const c = new Conv(fx);
  const [owner, a, b, d] = hexIds(4) as [string, string, string, string];
  await c.createGroup(owner, [owner, a]);
  await c.send(owner, 1); // seq 1 at version 1
  await c.membership(JOIN, 1, [b], { sender: owner }); // seq 2, version 2
  await c.membership(JOIN, 2, [d], { sender: owner }); // seq 3, version 3
  assert.deepEqual(Object.keys(await c.hgetall(c.keys.grpdeltas)).sort(), ["2", "3"]);

  await c.client.hdel(c.keys.grpdeltas, "2");
  const missing2 = await load(c, [1]);
  assert.deepEqual(missing2, [LUA_STATUS.SNAPSHOT_MISSING, 2]);
  assert.equal(luaStatus(missing2), "SNAPSHOT_MISSING");
  // the CONTROL messages carry their audience and need no delta
  assert.equal(groups(await load(c, [2, 3])).length, 2);

  await c.client.hset(c.keys.grpdeltas, "2", `1|${b}`);
  await c.client.hdel(c.keys.grpdeltas, "3");
  assert.deepEqual(await load(c, [1]), [-8, 3]);
});

/** How many times Redis ran `command` since the last CONFIG RESETSTAT (calls from scripts count). */
async function calls(c: Conv, command: string): Promise<number> {
  const info = await c.client.info("commandstats");
  return Number(new RegExp(`^cmdstat_${command}:calls=(\\d+)`, "m").exec(info)?.[1] ?? 0);
}

test("loadForDispatch: a backlog frozen at many versions walks each delta once, not once per version (linear, not quadratic)", async () => {
  // the relay after an outage: messages pending at versions 1..N, one membership change between each
  const c = new Conv(fx);
  const [owner, a] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner, a]);
  const n = 40;
  const others = hexIds(n);
  const expected: string[][] = [];
  let members = [owner, a];
  for (let v = 1; v <= n; v++) {
    const m = await c.send(owner, v); // seq 2v-1 at version v
    expected.push([String(2 * v - 1), "D", `${2 * v - 1}|${m.rest}`, String(v), [...members].sort().join("")]);
    const u = others[v - 1]!;
    await c.membership(JOIN, v, [u], { sender: owner }); // seq 2v, version v + 1
    members = [...members, u];
  }
  assert.equal(Object.keys(await c.hgetall(c.keys.grpdeltas)).length, n, "a delta per version while messages are pending");
  const seqs = Array.from({ length: n }, (_, i) => 2 * i + 1);

  await c.client.config("RESETSTAT");
  const reply = await load(c, [...seqs].reverse());
  const hgets = await calls(c, "hget");
  assert.deepEqual(groups(reply), [...expected].reverse(), "each message expands to the members at its own version, in ARGV order");
  // one HGET of the version, one of the fanout pending count, one of commits per seq, one per
  // delta: n + n + 2. Walking the deltas from the current version down once per pending version
  // made it n + 1 + n(n+1)/2 (861 here).
  assert.ok(hgets <= 2 * n + 2, `loadForDispatch ran ${hgets} HGETs for ${n} messages pending at ${n} versions`);
});

test("loadForDispatch: above the member budget (HLEN, left members included) a group message goes to a fanout job, unread; so does every later seq of the conversation in the batch", async () => {
  const c = new Conv(fx);
  const [owner, a, b, d] = hexIds(4) as [string, string, string, string];
  await c.createGroup(owner, [owner, a, b]);
  const m1 = await c.send(owner, 1); // seq 1 at version 1: 3 entries in the member table
  // control messages to the affected users only (broadcast threshold 0): audiences of 1
  const join = await c.membership(JOIN, 1, [d], { sender: owner, broadcastMax: 0 }); // seq 2, version 2
  await c.membership(LEAVE, 2, [b], { broadcastMax: 0 }); // seq 3, version 3: b stays in the table as LEFT
  const m4 = await c.send(a, 3); // seq 4 at version 3: 4 entries, 3 ACTIVE
  const before = await c.snapshot();

  // budget 4: the table holds 4 entries (b LEFT among them), not above it: everything expands
  assert.deepEqual(groups(await load(c, [1, 2], 4)).map((g) => g.slice(0, 2)), [["1", "D"], ["2", "D"]]);
  // budget 3: HLEN 4 is above it. Seq 1 (a group message) goes to a job, and so do the later seqs
  // 2 and 3 (control messages with small audiences) and 4, whatever their size: they must reach
  // the log after seq 1's chunks. The version rides along; a group message ("M") brings its entry
  // too (the relay announces it to the devices online in one members record, issue 27).
  const reply = groups(await load(c, [1, 2, 3, 4], 3));
  assert.deepEqual(reply, [["1", "M", `1|${m1.rest}`, "1", ""], ["2", "F", "", "2", ""], ["3", "F", "", "3", ""], ["4", "M", `4|${m4.rest}`, "3", ""]]);
  // a seq before the first one handed to a job is dispatched: order is per conversation, from that seq on
  const cut = groups(await load(c, [2, 4], 3));
  assert.deepEqual(cut.map((g) => g.slice(0, 2)), [["2", "D"], ["4", "M"]]);
  assert.equal(cut[0]![2], `2|${join.rest}`);
  assert.deepEqual(cut[0]![4], d);
  // ARGV order is kept; the cut follows seq order, not ARGV order
  assert.deepEqual(groups(await load(c, [4, 2], 3)).map((g) => g.slice(0, 2)), [["4", "M"], ["2", "D"]]);
  assert.deepEqual(await c.snapshot(), before, "reading changes nothing");
});

test("loadForDispatch: a control message whose explicit audience exceeds the budget goes to a fanout job; a pending job sends every seq of its conversation after it", async () => {
  const c = new Conv(fx);
  const [owner, a, b, d] = hexIds(4) as [string, string, string, string];
  await c.createGroup(owner, [owner, a]);
  await c.membership(JOIN, 1, [b, d], { sender: owner }); // seq 1, version 2: audience {owner, a, b, d}
  const m2 = await c.send(a, 2); // seq 2 at version 2
  assert.deepEqual(groups(await load(c, [1, 2], 3)).map((g) => g.slice(0, 2)), [["1", "F"], ["2", "M"]],
    "an audience of 4 above a budget of 3 (the table's 4 entries too)");
  assert.deepEqual(groups(await load(c, [1, 2], 4)).map((g) => g.slice(0, 2)), [["1", "D"], ["2", "D"]]);

  // a job of this conversation pending in the bucket: every seq goes behind it, however small
  await c.client.hset(fanoutOf(c.keys).fanoutPending, c.keys.outboxRef, 1);
  assert.deepEqual(groups(await load(c, [2], 1000)), [["2", "M", `2|${m2.rest}`, "2", ""]]);
  // another conversation's pending job changes nothing here
  await c.client.hdel(fanoutOf(c.keys).fanoutPending, c.keys.outboxRef);
  await c.client.hset(fanoutOf(c.keys).fanoutPending, `${hexId()}|${hexId()}`, 1);
  assert.deepEqual(groups(await load(c, [2], 1000)), [["2", "D", `2|${m2.rest}`, "2", [owner, a, b, d].sort().join("")]]);
});
