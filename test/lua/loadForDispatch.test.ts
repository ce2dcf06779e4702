import { test } from "node:test";
import assert from "node:assert/strict";
import { LUA_STATUS, luaStatus } from "../../core/index.js";
import { Conv, hexIds, splitSorted, useRedis } from "./helpers.js";

const fx = useRedis();

const JOIN = 1;
const LEAVE = 2;
const REMOVE = 3;

/** The reply's 4-item groups. */
function groups(reply: unknown[]): [string, string, string, string][] {
  assert.equal(reply.length % 4, 0);
  const out: [string, string, string, string][] = [];
  for (let i = 0; i < reply.length; i += 4) out.push(reply.slice(i, i + 4).map(String) as [string, string, string, string]);
  return out;
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

  const reply = await c.run("loadForDispatch", [1, 2, 3, 4]);
  const [g1, g2, g3, g4] = groups(reply);
  assert.deepEqual(g1, ["1", `1|${m1.rest}`, "1", [owner, a, b].sort().join("")]);
  // CONTROL messages: the explicit audience of the commit record, verbatim
  assert.deepEqual(g2, ["2", `2|${join.rest}`, "2", commits["2"]!.slice("R|2|".length)]);
  assert.deepEqual(splitSorted(g2[3]), [owner, a, b, d].sort());
  assert.deepEqual(g3, ["3", `3|${remove.rest}`, "3", commits["3"]!.slice("R|3|".length)]);
  assert.deepEqual(splitSorted(g3[3]), [owner, a, b, d].sort());
  assert.deepEqual(g4, ["4", `4|${m4.rest}`, "3", [owner, a, d].sort().join("")]);
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

  const [g3, g1, g5] = groups(await c.run("loadForDispatch", [3, 1, 5]));
  assert.deepEqual(g3, ["3", `3|${m3.rest}`, "2", owner]);
  assert.deepEqual(g1, ["1", `1|${m1.rest}`, "1", [owner, a].sort().join("")]);
  assert.deepEqual(g5, ["5", `5|${m5.rest}`, "3", [owner, a].sort().join("")]);
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
  assert.deepEqual(groups(await c.run("loadForDispatch", [2])), [["2", `2|${m.rest}`, "2", [owner, a].sort().join("")]]);
});

test("loadForDispatch: a seq no longer RECORDED (or never recorded) gives an empty entry", async () => {
  const c = new Conv(fx);
  const [owner] = hexIds(1) as [string];
  await c.createGroup(owner, [owner]);
  await c.send(owner, 1);
  const m2 = await c.send(owner, 1);
  assert.equal(await c.run("markCommitted", ["", 0, c.keys.outboxRef, 1]).then((r) => r[0]), 1);
  assert.deepEqual(await c.zrange(c.keys.vpending), [["2", 1]]);
  assert.equal(await c.exists(c.keys.commits), 0);

  assert.deepEqual(groups(await c.run("loadForDispatch", [1, 2, 99])), [
    ["1", "", "0", ""],
    ["2", `2|${m2.rest}`, "1", owner],
    ["99", "", "0", ""],
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
  assert.deepEqual(groups(await c.run("loadForDispatch", [1, 2, 3])), [
    ["1", `1|${m1.rest}`, "1", owner],
    ["2", `2|${join.rest}`, "2", commits["2"]!.slice("R|2|".length)],
    ["3", `3|${m3.rest}`, "2", [owner, a].sort().join("")],
  ]);

  // without its vpending entry a NORMAL message is COMMITTED, though its history entry stays
  await c.client.zrem(c.keys.vpending, "1");
  // without its commits entry a CONTROL message is COMMITTED, though its history entry stays
  await c.client.hdel(c.keys.commits, "2");
  assert.equal((await c.zrange(c.keys.hist)).length, 3);
  assert.deepEqual(groups(await c.run("loadForDispatch", [1, 2, 3])), [
    ["1", "", "0", ""],
    ["2", "", "0", ""],
    ["3", `3|${m3.rest}`, "2", [owner, a].sort().join("")],
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
  const missing2 = await c.run("loadForDispatch", [1]);
  assert.deepEqual(missing2, [LUA_STATUS.SNAPSHOT_MISSING, 2]);
  assert.equal(luaStatus(missing2), "SNAPSHOT_MISSING");
  // the CONTROL messages carry their audience and need no delta
  assert.equal(groups(await c.run("loadForDispatch", [2, 3])).length, 2);

  await c.client.hset(c.keys.grpdeltas, "2", `1|${b}`);
  await c.client.hdel(c.keys.grpdeltas, "3");
  assert.deepEqual(await c.run("loadForDispatch", [1]), [-8, 3]);
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
    expected.push([String(2 * v - 1), `${2 * v - 1}|${m.rest}`, String(v), [...members].sort().join("")]);
    const u = others[v - 1]!;
    await c.membership(JOIN, v, [u], { sender: owner }); // seq 2v, version v + 1
    members = [...members, u];
  }
  assert.equal(Object.keys(await c.hgetall(c.keys.grpdeltas)).length, n, "a delta per version while messages are pending");
  const seqs = Array.from({ length: n }, (_, i) => 2 * i + 1);

  await c.client.config("RESETSTAT");
  const reply = await c.run("loadForDispatch", [...seqs].reverse());
  const hgets = await calls(c, "hget");
  assert.deepEqual(groups(reply), [...expected].reverse(), "each message expands to the members at its own version, in ARGV order");
  // one HGET of the version, one of commits per seq, one per delta: n + n + 1. Walking the deltas
  // from the current version down once per pending version made it n + 1 + n(n+1)/2 (861 here).
  assert.ok(hgets <= 2 * n + 1, `loadForDispatch ran ${hgets} HGETs for ${n} messages pending at ${n} versions`);
});
