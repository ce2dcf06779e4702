/**
 * lua/cmd-sync/commitCmd-6.lua called raw (its header's KEYS and ARGV): the replies of every
 * outcome and what each writes, read back straight from Redis. The typed path is covered by
 * test/core/cmd-sync/log.test.ts.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { callScript, KeySpace } from "../../core/index.js";
import { dumpKeys } from "../harness/dump.js";
import { hexId, hexIds, keyPrefix, useRedis } from "./helpers.js";

const fx = useRedis();

function channel() {
  const ks = new KeySpace(keyPrefix());
  const k = (name: string) => ks.key("{b042}", name, "t:1:c____cmd");
  return { seq: k("cmdseq"), hist: k("cmdhist"), idem: k("cmdidem"), recent: ks.key("{b042}", "cmdrecent"), members: ks.key("{b042}", "grpmembers", "t:g"), meta: ks.key("{b042}", "grpmeta", "t:g") };
}

const argv = (mode: "g" | "r", cmno: string, recipients: string, max = 10) => [mode, cmno, "mid", 3, "", "Y21ubw==", "cGF5", "tt|1|c____cmd|", 86_400_000, max, recipients];

test("commitCmd: request-scoped commit, then a duplicate that writes nothing", async () => {
  const k = channel();
  const client = fx.store.clientFor("{b042}");
  const rcpt = hexIds(2);
  const keys = [k.seq, k.hist, k.idem, k.recent, k.hist, k.hist];
  const r1 = await callScript(client, "commitCmd", keys, argv("r", "m1", rcpt.join("")));
  assert.equal(r1[0], 0);
  assert.equal(r1[1], 1);
  assert.equal(r1[3], rcpt.join(""));
  const ms = Number(r1[2]);
  const entries = await client.zrange(k.hist, "0", "-1", "WITHSCORES");
  assert.deepEqual(entries, [`1|mid|${ms}|3||Y21ubw==|${rcpt.join("")}|cGF5`, "1"]);
  assert.deepEqual(await client.zrange(k.recent, "0", "-1", "WITHSCORES"), ["tt|1|c____cmd|1", String(ms)]);
  // the idempotency value carries the commit time and the message id (retention keeps it by its own time)
  assert.equal(await client.hget(k.idem, "m1"), `1|${ms}|mid`);
  const before = await dumpKeys(client, [k.seq, k.hist, k.idem, k.recent]);
  const dup = await callScript(client, "commitCmd", keys, argv("r", "m1", hexId()));
  assert.deepEqual(dup, [1, 1, entries[0], `1|${ms}|mid`]);
  assert.equal(await dumpKeys(client, [k.seq, k.hist, k.idem, k.recent]), before);
  // the history entry gone (every recipient acknowledged it) and the value kept: the duplicate says so
  // with an empty entry; a value of the old form ("seq") is read the same way
  await client.zremrangebyscore(k.hist, 1, 1);
  assert.deepEqual(await callScript(client, "commitCmd", keys, argv("r", "m1", hexId())), [1, 1, "", `1|${ms}|mid`]);
  await client.hset(k.idem, "m0", "1");
  assert.deepEqual(await callScript(client, "commitCmd", keys, argv("r", "m0", hexId())), [1, 1, "", "1"]);
  assert.equal(await client.get(k.seq), "1", "no duplicate allocated a seq");
});

test("commitCmd: group-sourced freezes the active members; no group and too many members write nothing", async () => {
  const k = channel();
  const client = fx.store.clientFor("{b042}");
  const keys = [k.seq, k.hist, k.idem, k.recent, k.members, k.meta];
  assert.deepEqual(await callScript(client, "commitCmd", keys, argv("g", "x", "")), [-3]);
  const [a, b, c] = hexIds(3);
  await client.hset(k.members, a!, "0||A", b!, "0|5|L", c!, "4||A");
  await client.hset(k.meta, "version", 3, "member_count", 2);
  assert.deepEqual(await callScript(client, "commitCmd", keys, argv("g", "y", "", 1)), [-13, 2]);
  assert.equal(await client.exists(k.seq, k.hist, k.idem, k.recent), 0, "nothing written by the refusals");
  const r = await callScript(client, "commitCmd", keys, argv("g", "z", ""));
  assert.deepEqual([r[0], r[1], r[3]], [0, 1, [a, c].sort().join("")]);
});

test("commitCmd: a group past the cap is refused from its member_count, before its member table is read", async () => {
  const k = channel();
  const client = fx.store.clientFor("{b042}");
  const keys = [k.seq, k.hist, k.idem, k.recent, k.members, k.meta];
  // a member table that is not one (a string): any read of it as a hash would fail WRONGTYPE
  await client.set(k.members, "not read");
  await client.hset(k.meta, "version", 1, "member_count", 11);
  assert.deepEqual(await callScript(client, "commitCmd", keys, argv("g", "big", "", 10)), [-13, 11]);
  assert.equal(await client.exists(k.seq, k.hist, k.idem, k.recent), 0, "nothing written");
});

test("commitCmd: the recent index is trimmed by age at each commit", async () => {
  const k = channel();
  const client = fx.store.clientFor("{b042}");
  await client.zadd(k.recent, 5, "ancient");
  await callScript(client, "commitCmd", [k.seq, k.hist, k.idem, k.recent, k.hist, k.hist], argv("r", "t1", hexId()));
  assert.equal(await client.zscore(k.recent, "ancient"), null);
  assert.equal(await client.zcard(k.recent), 1);
});
