/**
 * trimCmdHistory-5 (issue 26) on a real redis-server: a CMD channel's history (entries written here
 * by hand in the commit script's format "seq|messageIdHex|timestampMs|…") trimmed by count and by
 * age in bounded steps, its idempotency index following, the seq counter untouched, the fence, the
 * dry run. Every expected reply is worked out by hand.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { bucketTag, callScript, KeySpace, unitLeaseKey, type RedisClient } from "../../core/index.js";
import { dumpKeys } from "../harness/dump.js";
import { keyPrefix, useRedis } from "./helpers.js";

const fx = useRedis();
const T0 = 1_700_000_000_000;

/** A channel of `n` entries, seq i committed at T0 + i seconds with client_msg_no c-i; its keys in the script's order. */
async function channel(n: number): Promise<{ client: RedisClient; keys: string[]; hist: string; idem: string; seq: string; trim: string }> {
  const space = new KeySpace(keyPrefix());
  const tag = bucketTag(7);
  const [seq, hist, idem, trim] = ["cmdseq", "cmdhist", "cmdidem", "retention:cmdtrim"].map((k) => space.key(tag, k, "t|1|c____cmd")) as [string, string, string, string];
  const client = fx.store.clientFor(tag);
  for (let i = 1; i <= n; i++) {
    await client.zadd(hist, i, `${i}|${"ab".repeat(16)}|${T0 + i * 1000}|0||Yy0${i}|${"cd".repeat(16)}|cA==`);
    await client.hset(idem, `c-${i}`, String(i));
  }
  await client.set(seq, String(n));
  return { client, keys: [unitLeaseKey(space, "relay", 7), seq, hist, idem, trim], hist, idem, seq, trim };
}
const run = (c: { client: RedisClient; keys: string[] }, a: { owner?: string; token?: number; now?: number; maxAgeMs?: number; keep?: number; budget?: number; dry?: boolean }) =>
  callScript(c.client, "trimCmdHistory", c.keys, [a.owner ?? "", a.token ?? 0, "t|1|c____cmd", a.now ?? T0, a.maxAgeMs ?? 0, a.keep ?? 0, a.budget ?? 100, a.dry ? 1 : 0]);
const seqs = async (client: RedisClient, key: string) => (await client.zrange(key, "0", "-1", "WITHSCORES")).filter((_, i) => i % 2 === 1).map(Number);

test("trimCmdHistory: keep 4 of 10 in steps of 3 — 3, 3, then nothing; idempotency ids of trimmed seqs go; the counter stays", async () => {
  const c = await channel(10);
  // floor 10 − 4 + 1 = 7; at most 3 a call: seqs 1–3 (more), 4–6 (done: nothing below 7 is left past the budget)
  assert.deepEqual(await run(c, { keep: 4, budget: 3 }), [0, 3, 3, 1, 7, 7]);
  assert.deepEqual(await run(c, { keep: 4, budget: 3 }), [0, 3, 3, 0, 4, 4]);
  assert.deepEqual(await run(c, { keep: 4, budget: 3 }), [0, 0, 0, 0, 4, 4]);
  assert.deepEqual(await seqs(c.client, c.hist), [7, 8, 9, 10]);
  assert.deepEqual((await c.client.hkeys(c.idem)).sort(), ["c-10", "c-7", "c-8", "c-9"]);
  assert.equal(await c.client.get(c.seq), "10");
});

test("trimCmdHistory: age — entries committed before now − max_age go, the first younger one stays", async () => {
  const c = await channel(6);
  // now = T0 + 10 s, max age 6.5 s: cutoff T0 + 3.5 s → seqs 1, 2, 3 (at +1, +2, +3 s) go
  assert.deepEqual(await run(c, { now: T0 + 10_000, maxAgeMs: 6_500 }), [0, 3, 3, 0, 3, 3]);
  assert.deepEqual(await seqs(c.client, c.hist), [4, 5, 6]);
  // everything past the age: the history empties, and the idempotency index with it
  assert.deepEqual(await run(c, { now: T0 + 100_000, maxAgeMs: 1_000 }), [0, 3, 3, 0, 0, 0]);
  assert.equal(await c.client.get(c.seq), "6");
});

test("trimCmdHistory: a dry run counts and writes nothing; a fenced call writes nothing", async () => {
  const c = await channel(5);
  const before = await dumpKeys(c.client, [c.hist, c.idem, c.seq, c.trim]);
  assert.deepEqual(await run(c, { keep: 2, dry: true }), [0, 3, 0, 0, 5, 5]);
  assert.equal(await dumpKeys(c.client, [c.hist, c.idem, c.seq, c.trim]), before);
  await c.client.hset(c.keys[0]!, "owner", "n1", "token", 3);
  for (const [owner, token] of [["", 0], ["n1", 2], ["n2", 3]] as const) assert.deepEqual(await run(c, { owner, token, keep: 2 }), [-10], `${owner}/${token}`);
  assert.equal(await dumpKeys(c.client, [c.hist, c.idem, c.seq, c.trim]), before);
  assert.deepEqual(await run(c, { owner: "n1", token: 3, keep: 2 }), [0, 3, 3, 0, 2, 2]);
});

/** The same channel with idempotency values of today's form "seq|timestampMs|messageIdHex". */
async function channelNow(n: number): Promise<Awaited<ReturnType<typeof channel>>> {
  const c = await channel(n);
  for (let i = 1; i <= n; i++) await c.client.hset(c.idem, `c-${i}`, `${i}|${T0 + i * 1000}|${"ab".repeat(16)}`);
  return c;
}
const runAcked = (c: { client: RedisClient; keys: string[] }, acked: number, a: { now?: number; maxAgeMs?: number; keep?: number; budget?: number; dry?: boolean } = {}) =>
  callScript(c.client, "trimCmdHistory", c.keys, ["", 0, "t|1|c____cmd", a.now ?? T0, a.maxAgeMs ?? 0, a.keep ?? 0, a.budget ?? 100, a.dry ? 1 : 0, acked]);

test("trimCmdHistory: acked_through removes the acknowledged history without a rule; the idempotency index keeps its window (the rules, by each value's own time)", async () => {
  const c = await channelNow(6);
  // every recipient acknowledged through 4, no rule: seqs 1–4 go, every client_msg_no stays
  assert.deepEqual(await runAcked(c, 4), [0, 4, 0, 0, 2, 6]);
  assert.deepEqual(await seqs(c.client, c.hist), [5, 6]);
  // an age rule later: now T0 + 10 s, max age 6.5 s → cutoff T0 + 3.5 s; the history's first entry
  // (seq 5 at +5 s) is young: nothing more goes from it; c-1…c-3 (+1…+3 s) are past the age
  assert.deepEqual(await runAcked(c, 4, { now: T0 + 10_000, maxAgeMs: 6_500 }), [0, 0, 3, 0, 2, 3]);
  assert.deepEqual((await c.client.hkeys(c.idem)).sort(), ["c-4", "c-5", "c-6"]);
  // keep 1: seq 5 goes from the history, c-4 and c-5 from the index (below 6 − 1 + 1 = 6)
  assert.deepEqual(await runAcked(c, 4, { keep: 1 }), [0, 1, 2, 0, 1, 1]);
  assert.deepEqual(await seqs(c.client, c.hist), [6]);
  assert.equal(await c.client.get(c.seq), "6");
});

test("trimCmdHistory: acked_through with values of the old form ('seq'): they go with their history entry; past the counter it stops at the counter; the budget holds", async () => {
  const old = await channel(6);
  assert.deepEqual(await runAcked(old, 4), [0, 4, 4, 0, 2, 2]);
  assert.deepEqual((await old.client.hkeys(old.idem)).sort(), ["c-5", "c-6"]);
  const all = await channelNow(3);
  assert.deepEqual(await runAcked(all, 100), [0, 3, 0, 0, 0, 3], "an acknowledgement past the last seq empties the history, not the index");
  const big = await channelNow(6);
  assert.deepEqual(await runAcked(big, 6, { budget: 4 }), [0, 4, 0, 1, 2, 6], "4 at most a call, more = 1");
  assert.deepEqual(await runAcked(big, 6, { budget: 4, dry: true }), [0, 2, 0, 0, 2, 6], "a dry run counts the rest");
  assert.deepEqual(await seqs(big.client, big.hist), [5, 6]);
});
