import { test } from "node:test";
import assert from "node:assert/strict";
import { Conv, fanoutOf, hexId, SCRIPT_KEYS, useRedis } from "./helpers.js";

const fx = useRedis();

test("saveFanoutProgress: a compare-and-set on the head job's step; the last step pops the job and lowers its conversation's pending count, dropping it at 0", async () => {
  const c = new Conv(fx);
  const ref = c.keys.outboxRef;
  const f = fanoutOf(c.keys);
  const [j1, j2] = [`${ref}|7`, `${ref}|9`];
  await c.client.rpush(f.fanoutJobs, j1, j2);
  await c.client.hset(f.fanoutState, j1, "5|0|0", `${j1}|audience`, hexId(), j2, "5|0|0");
  await c.client.hset(f.fanoutPending, ref, 2, `${hexId()}|${hexId()}`, 1);
  const dump = async () => [await c.lrange(f.fanoutJobs), await c.hgetall(f.fanoutState), await c.hgetall(f.fanoutPending)];
  const save = (job: string, cursor: string, chunk: number, next: string, nextChunk: number, owner = "", token = 0) =>
    c.run("saveFanoutProgress", [owner, token, job, cursor, chunk, next, nextChunk]);

  assert.deepEqual(await save(j1, "0", 0, "17", 1), [1]);
  assert.equal((await c.hgetall(f.fanoutState))[j1], "5|17|1");
  const before = await dump();
  assert.deepEqual(await save(j1, "0", 0, "33", 2), [0], "not at that step any more");
  assert.deepEqual(await save(j1, "17", 0, "33", 2), [0], "the chunk number is compared too");
  assert.deepEqual(await save(j2, "0", 0, "0", 1), [0], "not the head job");
  assert.deepEqual(await save(`${ref}|99`, "0", 0, "0", 1), [0], "no such job");
  assert.deepEqual(await dump(), before);

  // fenced by the bucket's relay lease like markCommitted
  await c.client.hset(SCRIPT_KEYS.saveFanoutProgress(c.keys)[0]!, "owner", "n1", "token", 4);
  assert.deepEqual(await save(j1, "17", 1, "0", 2), [-10]);
  assert.deepEqual(await save(j1, "17", 1, "0", 2, "n1", 3), [-10]);
  assert.deepEqual(await dump(), before);

  assert.deepEqual(await save(j1, "17", 1, "0", 2, "n1", 4), [2]);
  assert.deepEqual(await dump(), [[j2], { [j2]: "5|0|0" }, { [ref]: "1", ...Object.fromEntries(Object.entries(before[2]!).filter(([k]) => k !== ref)) }]);
  assert.deepEqual(await save(j2, "0", 0, "0", 1, "n1", 4), [2]);
  assert.equal(await c.exists(f.fanoutJobs), 0);
  assert.equal(await c.exists(f.fanoutState), 0);
  assert.deepEqual(Object.keys(await c.hgetall(f.fanoutPending)).includes(ref), false, "the count's field goes at 0");
  assert.equal(Object.keys(await c.hgetall(f.fanoutPending)).length, 1, "another conversation's count stays");
});
