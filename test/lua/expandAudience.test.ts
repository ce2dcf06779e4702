import { test } from "node:test";
import assert from "node:assert/strict";
import { Conv, fanoutOf, hexIds, normalRest, useRedis } from "./helpers.js";

const fx = useRedis();

/** Runs a job to its end from its state as stored, `count` members a step; returns each step's recipients and the replies. */
async function expandAll(c: Conv, job: string, count: number): Promise<{ chunks: string[][]; replies: unknown[][] }> {
  const state = fanoutOf(c.keys).fanoutState;
  const chunks: string[][] = [];
  const replies: unknown[][] = [];
  for (let step = 0; ; step++) {
    assert.ok(step < 10_000, "the cursor comes back to 0");
    const r = await c.run("expandAudience", [job, count]);
    replies.push(r);
    const ids = String(r[1]);
    chunks.push(Array.from({ length: ids.length / 32 }, (_, i) => ids.slice(i * 32, i * 32 + 32)));
    const [version] = String(await c.client.hget(state, job)).split("|");
    // what saveFanoutProgress writes after the append (its own test covers it)
    if (r[0] === "0") return { chunks, replies };
    await c.client.hset(state, job, `${version}|${String(r[0])}|${step + 1}`);
  }
}

test("expandAudience: a group message's chunks keep exactly the members whose interval (joinedAt, leftAt) contains its seq; resuming from each cursor gives every one of them once", async () => {
  const c = new Conv(fx);
  const S = 10;
  const job = `${c.keys.outboxRef}|${S}`;
  const f = fanoutOf(c.keys);
  // hand-picked intervals around S = 10 (joinedAt = the join event's seq − 1, leftAt = the leave event's seq)
  const [initial, joined8, joinedAfter, leftAfter, leftBefore, rejoinedAfter, rejoinedBefore, leftAndGone] = hexIds(8) as string[];
  const table: Record<string, string> = {
    [initial!]: "0||A", //           a member from the start: in
    [joined8!]: "8||A", //           joined at seq 9, before S: in
    [joinedAfter!]: "10||A", //      joined at seq 11, after S: out
    [leftAfter!]: "0|11|L", //       left at seq 11, after S: in
    [leftBefore!]: "0|7|R", //       removed at seq 7: out
    [rejoinedAfter!]: "12||A", //    a member at S who left at 11 and rejoined at 13: the rejoin replaced the interval: out (S is outside it)
    [rejoinedBefore!]: "4||A", //    left at 3, rejoined at 5: in
    [leftAndGone!]: "3|5|L", //      joined at 4, left at 5: out
  };
  // enough members that the table is a real hash table, not a listpack (up to 512 entries by
  // default, which HSCAN returns whole, COUNT or not): 400 who joined after S (out), 300 initial
  // members (in)
  const later = hexIds(400);
  const early = hexIds(300);
  for (const u of later) table[u] = "20||A";
  for (const u of early) table[u] = "0||A";
  await c.client.hset(c.keys.grpmembers, table);
  const entry = `${S}|${normalRest(hexIds(1)[0]!, initial!)}`;
  await c.client.zadd(c.keys.hist, S, entry);
  await c.client.hset(f.fanoutState, job, "3|0|0");

  const expected = [initial!, joined8!, leftAfter!, rejoinedBefore!, ...early].sort();
  const { chunks, replies } = await expandAll(c, job, 10);
  const all = chunks.flat();
  assert.equal(all.length, new Set(all).size, "no member twice (no rehash during this scan)");
  assert.deepEqual(all.sort(), expected);
  assert.ok(chunks.length >= 20, `${chunks.length} steps of about 10 members for 708 entries`);
  for (const r of replies) {
    assert.equal(r[2], entry, "each step carries the message's history entry");
    assert.equal(r[3], "3", "and the version the job was recorded at");
  }
  assert.deepEqual(replies.map((r) => r[5]), replies.map((_, i) => String(i)), "the chunk number each step started from");
});

test("expandAudience: a control message's chunks are slices of its explicit audience; an unknown job is {}", async () => {
  const c = new Conv(fx);
  const job = `${c.keys.outboxRef}|4`;
  const f = fanoutOf(c.keys);
  const audience = hexIds(25);
  const [member] = hexIds(1) as [string];
  // the member table is not read for a control message
  await c.client.hset(c.keys.grpmembers, member, "0||A");
  await c.client.zadd(c.keys.hist, 4, "4|entry");
  await c.client.hset(f.fanoutState, job, "6|0|0", `${job}|audience`, audience.join(""));
  const { chunks, replies } = await expandAll(c, job, 10);
  assert.deepEqual(chunks, [audience.slice(0, 10), audience.slice(10, 20), audience.slice(20)]);
  assert.deepEqual(replies.map((r) => [r[0], r[4]]), [["10", "0"], ["20", "10"], ["0", "20"]]);
  assert.equal(replies[0]![3], "6");

  assert.deepEqual(await c.run("expandAudience", [`${c.keys.outboxRef}|5`, 10]), []);
});

test("expandAudience: members added or leaving during the scan do not change the audience of S", async () => {
  const c = new Conv(fx);
  const S = 50;
  const job = `${c.keys.outboxRef}|${S}`;
  const members = hexIds(600);
  await c.client.hset(c.keys.grpmembers, Object.fromEntries(members.map((u) => [u, "0||A"])));
  await c.client.zadd(c.keys.hist, S, `${S}|entry`);
  await c.client.hset(fanoutOf(c.keys).fanoutState, job, "2|0|0");
  const seen: string[] = [];
  let cursor = "0";
  let step = 0;
  const newcomers = hexIds(50);
  do {
    const r = await c.run("expandAudience", [job, 20]);
    const ids = String(r[1]);
    for (let i = 0; i < ids.length; i += 32) seen.push(ids.slice(i, i + 32));
    cursor = String(r[0]);
    // between steps: someone joins (after S: joinedAt >= S) and someone leaves (after S: leftAt > S)
    if (step < newcomers.length) {
      await c.client.hset(c.keys.grpmembers, newcomers[step]!, `${S + step}||A`);
      await c.client.hset(c.keys.grpmembers, members[step]!, `0|${S + 1 + step}|L`);
    }
    await c.client.hset(fanoutOf(c.keys).fanoutState, job, `2|${cursor}|${++step}`);
  } while (cursor !== "0");
  // a rehash during the scan may repeat members (at-least-once), never drop one present throughout
  assert.deepEqual([...new Set(seen)].sort(), members);
});
