/**
 * trimConversation-9 (issue 26) on a real redis-server, key by key: the rule's floor, the bound
 * per call, the records still waiting for dispatch, the fence, the dry run, the idempotency page.
 * Expected seqs are worked out by hand from what each test commits.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { callScript, KeySpace, unitLeaseKey } from "../../core/index.js";
import { Conv, fanoutOf, hexId, hexIds, useRedis } from "./helpers.js";

const fx = useRedis();

function keysOf(c: Conv): string[] {
  const space = new KeySpace(c.keys.outbox.split(":")[0]!);
  return [unitLeaseKey(space, "relay", c.keys.bucket), c.keys.grpmeta, c.keys.cseq, c.keys.hist, c.keys.unreadidx, c.keys.vpending, c.keys.commits, fanoutOf(c.keys).fanoutPending, c.keys.idem];
}
const trim = (c: Conv, a: { owner?: string; token?: number; now?: number; maxAgeMs?: number; keep?: number; budget?: number; dry?: boolean }) =>
  callScript(c.client, "trimConversation", keysOf(c), [a.owner ?? "", a.token ?? 0, c.keys.outboxRef, a.now ?? 0, a.maxAgeMs ?? 0, a.keep ?? 0, a.budget ?? 100, a.dry ? 1 : 0]);
const seqs = async (c: Conv, key: string) => (await c.client.zrange(key, "0", "-1", "WITHSCORES")).filter((_, i) => i % 2 === 1).map(Number);
const range = (lo: number, hi: number) => Array.from({ length: Math.max(0, hi - lo + 1) }, (_, i) => lo + i);

/** A group with 10 messages of `b`, as commitMessages leaves them: each still RECORDED (in vpending). */
async function tenMessages(): Promise<{ c: Conv; owner: string; b: string }> {
  const c = new Conv(fx);
  const [owner, b] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner, b]);
  for (let i = 0; i < 10; i++) await c.send(b, 1);
  return { c, owner, b };
}

test("trimConversation: never past a record still waiting for dispatch", async () => {
  const { c } = await tenMessages();
  // keep 2 → floor 9; every seq is still in vpending, so nothing may go
  assert.deepEqual(await trim(c, { keep: 2 }), [0, 1, 1, 0, 0, 0, 0]);
  assert.deepEqual(await seqs(c, c.keys.hist), range(1, 10));
  // seqs 1..6 dispatched (what markCommitted drops): the floor stops at 7, the oldest still pending
  await c.client.zrem(c.keys.vpending, "1", "2", "3", "4", "5", "6");
  assert.deepEqual(await trim(c, { keep: 2 }), [0, 1, 7, 6, 6, 6, 0]);
  assert.deepEqual(await seqs(c, c.keys.hist), range(7, 10));
  assert.deepEqual(await seqs(c, c.keys.unreadidx), range(7, 10));
  assert.equal(await c.client.hget(c.keys.grpmeta, "earliest_seq"), "7");
  // a fanout job pending for the conversation: skipped, nothing written
  await c.client.del(c.keys.vpending);
  await c.client.hset(fanoutOf(c.keys).fanoutPending, c.keys.outboxRef, 1);
  assert.deepEqual(await trim(c, { keep: 2 }), [1, 7, "pending"]);
  assert.deepEqual(await seqs(c, c.keys.hist), range(7, 10));
  await c.client.hdel(fanoutOf(c.keys).fanoutPending, c.keys.outboxRef);
  assert.deepEqual(await trim(c, { keep: 2 }), [0, 7, 9, 2, 2, 2, 0]);
  assert.deepEqual(await seqs(c, c.keys.hist), [9, 10]);
});

test("trimConversation: at most `budget` entries a call; `more` until the rule is met", async () => {
  const { c } = await tenMessages();
  await c.client.del(c.keys.vpending);
  // keep 1 → floor 10: 9 entries to go, 4 a call → 4, 4, 1 (and each call's HSCAN page, the whole of this small hash, drops their ids)
  assert.deepEqual(await trim(c, { keep: 1, budget: 4 }), [0, 1, 5, 4, 4, 4, 1]);
  assert.deepEqual(await trim(c, { keep: 1, budget: 4 }), [0, 5, 9, 4, 4, 4, 1]);
  assert.deepEqual(await trim(c, { keep: 1, budget: 4 }), [0, 9, 10, 1, 1, 1, 0]);
  assert.deepEqual(await trim(c, { keep: 1, budget: 4 }), [0, 10, 10, 0, 0, 0, 0]);
  assert.deepEqual(await seqs(c, c.keys.hist), [10]);
});

test("trimConversation: a dry run counts and writes nothing", async () => {
  const { c } = await tenMessages();
  await c.client.del(c.keys.vpending);
  const before = JSON.stringify([await seqs(c, c.keys.hist), await c.client.hgetall(c.keys.grpmeta), await c.client.hgetall(c.keys.idem)]);
  assert.deepEqual(await trim(c, { keep: 3, dry: true }), [0, 1, 8, 7, 7, 0, 0]);
  assert.equal(JSON.stringify([await seqs(c, c.keys.hist), await c.client.hgetall(c.keys.grpmeta), await c.client.hgetall(c.keys.idem)]), before);
});

test("trimConversation: fenced by the bucket's relay lease", async () => {
  const { c } = await tenMessages();
  await c.client.del(c.keys.vpending);
  const lease = keysOf(c)[0]!;
  await c.client.hset(lease, "owner", "n2", "token", 5);
  // no cluster (owner "", token 0) and an older token of the same node are both refused
  assert.deepEqual(await trim(c, { keep: 1 }), [-10]);
  assert.deepEqual(await trim(c, { keep: 1, owner: "n2", token: 4 }), [-10]);
  assert.deepEqual(await seqs(c, c.keys.hist), range(1, 10));
  assert.deepEqual(await trim(c, { keep: 1, owner: "n2", token: 5 }), [0, 1, 10, 9, 9, 9, 0]);
});

test("trimConversation: the age rule reads created_at; the idempotency ids of trimmed seqs go", async () => {
  const c = new Conv(fx);
  const [owner, b] = hexIds(2) as [string, string];
  await c.createGroup(owner, [owner, b]);
  // seq i created at T + i s (version-1 entries, as the helper writes them, with their own created_at)
  const T = 1_700_000_000_000;
  for (let i = 1; i <= 10; i++) {
    const rest = `${hexId()}|${b}|N|1|${T + i * 1000}|text/plain|${Buffer.from(`m${i}`).toString("base64")}`;
    await c.run("commitMessages", [1, c.keys.outboxRef, hexId(), b, rest]);
  }
  await c.client.del(c.keys.vpending);
  // now T + 10.5 s, at most 4 s old: kept iff T + i s >= T + 6.5 s, i.e. seqs 7..10
  assert.deepEqual(await trim(c, { now: T + 10_500, maxAgeMs: 4_000 }), [0, 1, 7, 6, 6, 6, 0]);
  assert.deepEqual(await seqs(c, c.keys.hist), range(7, 10));
  // every idempotency id left maps to a seq at or above the floor, and all of those are left
  const idem = await c.client.hgetall(c.keys.idem);
  assert.deepEqual(Object.values(idem).map((v) => Number(v.split("|")[0])).sort((x, y) => x - y), range(7, 10));
  // past every record's age: the floor goes past the last seq, the history is empty
  assert.deepEqual(await trim(c, { now: T + 60_000, maxAgeMs: 4_000 }), [0, 7, 11, 4, 4, 4, 0]);
  assert.deepEqual(await seqs(c, c.keys.hist), []);
  assert.equal(await c.client.hget(c.keys.grpmeta, "earliest_seq"), "11");
});
