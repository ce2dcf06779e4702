import { test } from "node:test";
import assert from "node:assert/strict";
import { Conv, fanoutOf, hexId, hexIds, SCRIPT_KEYS, splitSorted, useRedis } from "./helpers.js";

const fx = useRedis();

const JOIN = 1;

test("markCommitted: drops commit records, outbox and vpending entries; retires deltas at or below the oldest pending version", async () => {
  const c = new Conv(fx);
  const [owner, a, b, d] = hexIds(4) as [string, string, string, string];
  const ref = c.keys.outboxRef;
  await c.createGroup(owner, [owner, a]);
  await c.send(owner, 1); // seq 1 at version 1
  await c.membership(JOIN, 1, [b], { sender: owner }); // seq 2, version 2
  await c.send(a, 2); // seq 3 at version 2
  await c.membership(JOIN, 2, [d], { sender: owner }); // seq 4, version 3
  assert.deepEqual(await c.hgetall(c.keys.grpdeltas), { "2": `1|${b}`, "3": `1|${d}` });
  // RECORDED: the CONTROL messages (2, 4) in commits, the NORMAL ones (1, 3) in vpending
  assert.deepEqual(Object.keys(await c.hgetall(c.keys.commits)).sort(), ["2", "4"]);
  assert.deepEqual(await c.zrange(c.keys.vpending), [
    ["1", 1],
    ["3", 2],
  ]);
  const hist = await c.zrange(c.keys.hist);

  assert.deepEqual(await c.run("markCommitted", ["", 0, ref, 1, 1]), [1, 0]);
  assert.deepEqual(Object.keys(await c.hgetall(c.keys.commits)).sort(), ["2", "4"]);
  assert.deepEqual(await c.lrange(c.keys.outbox), [`${ref}|2`, `${ref}|3`, `${ref}|4`]);
  assert.deepEqual(await c.zrange(c.keys.vpending), [["3", 2]]);
  // seq 3 (version 2) still needs delta 3; delta 2 is needed by nobody
  assert.deepEqual(await c.hgetall(c.keys.grpdeltas), { "3": `1|${d}` });

  // idempotent: marking the same seq again finds nothing RECORDED and changes nothing
  const before = await c.snapshot();
  assert.deepEqual(await c.run("markCommitted", ["", 0, ref, 1, 1]), [0, 0]);
  assert.deepEqual(await c.snapshot(), before);

  // 2 and 4 from commits, 3 from vpending: each counted once
  assert.deepEqual(await c.run("markCommitted", ["", 0, ref, 3, 2, 3, 4]), [3, 0]);
  assert.equal(await c.exists(c.keys.commits), 0);
  assert.equal(await c.exists(c.keys.outbox), 0);
  assert.equal(await c.exists(c.keys.vpending), 0);
  assert.equal(await c.exists(c.keys.grpdeltas), 0);
  // history and idempotency index stay
  assert.deepEqual(await c.zrange(c.keys.hist), hist);
  assert.equal(Object.keys(await c.hgetall(c.keys.idem)).length, 4);
});

test("markCommitted: counts only seqs still RECORDED in a mixed batch", async () => {
  const c = new Conv(fx);
  const [owner] = hexIds(1) as [string];
  const ref = c.keys.outboxRef;
  await c.createGroup(owner, [owner]);
  for (let i = 0; i < 3; i++) await c.send(owner, 1);
  // NORMAL messages are RECORDED in vpending only
  assert.equal(await c.exists(c.keys.commits), 0);
  assert.deepEqual(await c.run("markCommitted", ["", 0, ref, 1, 2]), [1, 0]);
  assert.deepEqual(await c.zrange(c.keys.vpending), [
    ["1", 1],
    ["3", 1],
  ]);
  assert.deepEqual(await c.run("markCommitted", ["", 0, ref, 4, 1, 2, 3, 42]), [2, 0]);
  assert.equal(await c.exists(c.keys.commits), 0);
  assert.equal(await c.exists(c.keys.vpending), 0);
  assert.equal(await c.exists(c.keys.outbox), 0);
});

test("markCommitted: counts CONTROL seqs (commits) and NORMAL seqs (vpending) once each in a mixed batch", async () => {
  const c = new Conv(fx);
  const [owner, a, b] = hexIds(3) as [string, string, string];
  const ref = c.keys.outboxRef;
  await c.createGroup(owner, [owner]);
  await c.send(owner, 1); // seq 1 at version 1 (vpending)
  await c.membership(JOIN, 1, [a], { sender: owner }); // seq 2, version 2 (commits)
  await c.send(a, 2); // seq 3 at version 2 (vpending)
  await c.membership(JOIN, 2, [b], { sender: owner }); // seq 4, version 3 (commits)
  assert.deepEqual(Object.keys(await c.hgetall(c.keys.commits)).sort(), ["2", "4"]);
  assert.deepEqual(await c.zrange(c.keys.vpending), [
    ["1", 1],
    ["3", 2],
  ]);

  // one CONTROL seq, one NORMAL seq, one unknown
  assert.deepEqual(await c.run("markCommitted", ["", 0, ref, 3, 2, 3, 42]), [2, 0]);
  assert.deepEqual(Object.keys(await c.hgetall(c.keys.commits)), ["4"]);
  assert.deepEqual(await c.zrange(c.keys.vpending), [["1", 1]]);
  assert.deepEqual(await c.lrange(c.keys.outbox), [`${ref}|1`, `${ref}|4`]);
  // again, with the remaining two: each seq is in at most one of commits / vpending
  assert.deepEqual(await c.run("markCommitted", ["", 0, ref, 4, 1, 2, 3, 4]), [2, 0]);
  assert.equal(await c.exists(c.keys.commits), 0);
  assert.equal(await c.exists(c.keys.vpending), 0);
  assert.equal(await c.exists(c.keys.outbox), 0);
  assert.equal(await c.exists(c.keys.grpdeltas), 0);
});

test("markCommitted: leaves other conversations' outbox entries in the shared bucket outbox", async () => {
  const c = new Conv(fx);
  const [owner] = hexIds(1) as [string];
  const ref = c.keys.outboxRef;
  await c.createGroup(owner, [owner]);
  await c.send(owner, 1);
  const foreign = `${hexId()}|${hexId()}|1`;
  await c.client.rpush(c.keys.outbox, foreign);
  await c.send(owner, 1);
  assert.deepEqual(await c.lrange(c.keys.outbox), [`${ref}|1`, foreign, `${ref}|2`]);

  assert.deepEqual(await c.run("markCommitted", ["", 0, ref, 2, 1, 2]), [2, 0]);
  assert.deepEqual(await c.lrange(c.keys.outbox), [foreign]);
});

test("markCommitted: the oldest pending version decides, whatever order seqs are marked in", async () => {
  const c = new Conv(fx);
  const [owner, a, b] = hexIds(3) as [string, string, string];
  const ref = c.keys.outboxRef;
  await c.createGroup(owner, [owner]);
  await c.send(owner, 1); // seq 1 at version 1
  await c.membership(JOIN, 1, [a], { sender: owner }); // seq 2, version 2
  await c.send(owner, 2); // seq 3 at version 2
  await c.membership(JOIN, 2, [b], { sender: owner }); // seq 4, version 3

  // the newer message goes first: seq 1 (version 1) still needs deltas 2 and 3
  assert.deepEqual(await c.run("markCommitted", ["", 0, ref, 2, 3, 4]), [2, 0]);
  assert.deepEqual(Object.keys(await c.hgetall(c.keys.commits)), ["2"]);
  assert.deepEqual(await c.zrange(c.keys.vpending), [["1", 1]]);
  assert.deepEqual(await c.hgetall(c.keys.grpdeltas), { "2": `1|${a}`, "3": `1|${b}` });
  // and it still expands correctly
  const reply = await c.run("loadForDispatch", [1000, ref, 1]);
  assert.equal(reply[4], owner);
});

test("markCommitted: fenced by the bucket's relay lease (KEYS[5]): only its exact owner and token mark; anything else answers -10 and writes nothing", async () => {
  const c = new Conv(fx);
  const [owner] = hexIds(1) as [string];
  const ref = c.keys.outboxRef;
  await c.createGroup(owner, [owner]);
  await c.send(owner, 1);
  const lease = SCRIPT_KEYS.markCommitted(c.keys)[4]!;
  await c.client.hset(lease, "owner", "n1", "token", 3);
  const before = await c.snapshot();
  assert.deepEqual(await c.run("markCommitted", ["", 0, ref, 1, 1]), [-10], "no cluster token once a node took the bucket");
  assert.deepEqual(await c.run("markCommitted", ["n1", 2, ref, 1, 1]), [-10], "an older token of the same owner");
  assert.deepEqual(await c.run("markCommitted", ["n2", 3, ref, 1, 1]), [-10], "the same number from another owner (a lost lease write)");
  assert.deepEqual(await c.snapshot(), before);
  assert.deepEqual(await c.run("markCommitted", ["n1", 3, ref, 1, 1]), [1, 0]);
  assert.equal(await c.exists(c.keys.outbox), 0);
});

test("markCommitted: seqs handed to fanout jobs leave the outbox, commits and vpending, and become jobs in seq order with their version (and a control message's audience)", async () => {
  const c = new Conv(fx);
  const [owner, a, b] = hexIds(3) as [string, string, string];
  const ref = c.keys.outboxRef;
  const f = fanoutOf(c.keys);
  await c.createGroup(owner, [owner, a]);
  await c.send(owner, 1); // seq 1 at version 1 (vpending)
  await c.membership(JOIN, 1, [b], { sender: owner }); // seq 2, version 2 (commits)
  await c.send(a, 2); // seq 3 at version 2 (vpending)
  await c.send(a, 2); // seq 4 at version 2 (vpending)
  const audience2 = (await c.hgetall(c.keys.commits))["2"]!.slice("R|2|".length);
  assert.deepEqual(splitSorted(audience2), [owner, a, b].sort());

  // seq 1 appended to the log; 2 and 3 handed to jobs, 3 with its members record appended ("3|m",
  // issue 27): its job remembers that its chunks push nothing
  assert.deepEqual(await c.run("markCommitted", ["", 0, ref, 1, 1, 2, "3|m"]), [3, 2]);
  assert.deepEqual(await c.lrange(f.fanoutJobs), [`${ref}|2`, `${ref}|3`]);
  assert.deepEqual(await c.hgetall(f.fanoutState), { [`${ref}|2`]: "2|0|0", [`${ref}|2|audience`]: audience2, [`${ref}|3`]: "2|0|0", [`${ref}|3|pushed`]: "1" });
  assert.deepEqual(await c.hgetall(f.fanoutPending), { [ref]: "2" });
  assert.equal(await c.exists(c.keys.commits), 0);
  assert.deepEqual(await c.zrange(c.keys.vpending), [["4", 2]]);
  assert.deepEqual(await c.lrange(c.keys.outbox), [`${ref}|4`]);

  // again (a relay that crashed after this mark and loads the same seqs): no longer RECORDED, no second job
  const before = [await c.snapshot(), await c.lrange(f.fanoutJobs), await c.hgetall(f.fanoutState), await c.hgetall(f.fanoutPending)];
  assert.deepEqual(await c.run("markCommitted", ["", 0, ref, 0, 2, 3]), [0, 0]);
  assert.deepEqual([await c.snapshot(), await c.lrange(f.fanoutJobs), await c.hgetall(f.fanoutState), await c.hgetall(f.fanoutPending)], before);

  // the last one too: nothing pending, every delta retired (jobs expand from intervals, not deltas)
  assert.deepEqual(await c.run("markCommitted", ["", 0, ref, 0, 4]), [1, 1]);
  assert.deepEqual(await c.lrange(f.fanoutJobs), [`${ref}|2`, `${ref}|3`, `${ref}|4`]);
  assert.deepEqual(await c.hgetall(f.fanoutPending), { [ref]: "3" });
  assert.equal(await c.exists(c.keys.vpending), 0);
  assert.equal(await c.exists(c.keys.outbox), 0);
  assert.equal(await c.exists(c.keys.grpdeltas), 0);

  // expandAudience says which job's chunks push nothing; the job's end drops the mark with it
  const step = async (job: string) => await c.run("expandAudience", [job, 1000]) as string[];
  assert.equal((await step(`${ref}|2`))[6], "0", "a control message's job: its chunks are pushed");
  assert.equal((await step(`${ref}|3`))[6], "1", "the members record carried seq 3's pushes");
  assert.equal((await step(`${ref}|4`))[6], "0", "seq 4 was queued without one");
  assert.deepEqual(await c.run("saveFanoutProgress", ["", 0, `${ref}|2`, "0", 0, "0", 1]), [2], "job 2 done");
  assert.deepEqual(await c.run("saveFanoutProgress", ["", 0, `${ref}|3`, "0", 0, "0", 1]), [2], "job 3 done");
  assert.deepEqual(await c.hgetall(f.fanoutState), { [`${ref}|4`]: "2|0|0" });
});

test("markCommitted: a fenced call queues no job either", async () => {
  const c = new Conv(fx);
  const [owner] = hexIds(1) as [string];
  const ref = c.keys.outboxRef;
  const f = fanoutOf(c.keys);
  await c.createGroup(owner, [owner]);
  await c.send(owner, 1);
  await c.client.hset(SCRIPT_KEYS.markCommitted(c.keys)[4]!, "owner", "n1", "token", 3);
  const before = await c.snapshot();
  assert.deepEqual(await c.run("markCommitted", ["n1", 2, ref, 0, 1]), [-10]);
  assert.deepEqual(await c.snapshot(), before);
  assert.deepEqual([await c.exists(f.fanoutJobs), await c.exists(f.fanoutState), await c.exists(f.fanoutPending)], [0, 0, 0]);
});
