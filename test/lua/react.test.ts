/**
 * lua/reactions/react-5.lua called raw (spec 003 §4.1, issue 28): who may react, idempotency on
 * (user, key), the summary's counts and summary_version, the detail limits, the distinct-keys
 * limit, and a recall's step 2 (applyAnchorEvent-4) deleting the message's reactions. Every
 * expected value is worked out by hand from the calls here.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { callScript, encodeHistoryRest, hexToUuid, reactionWhoKey } from "../../core/index.js";
import { Conv, hexId, hexIds, SCRIPT_KEYS, useRedis } from "./helpers.js";

const fx = useRedis();
const T0 = 1_800_000_000_000;

function setUp(c: Conv) {
  const k = c.keys;
  const who = (seq: number) => reactionWhoKey(c.space, c.tenant, c.group, seq);
  const react = (user: string, seq: number, key: string, add: boolean, opts: { maxMembers?: number; maxDetails?: number; maxKeys?: number; now?: number } = {}) =>
    callScript(c.client, "react", [k.grpmeta, k.grpmembers, k.hist, k.rxsum, who(seq)], [user, seq, key, add ? "+" : "-", opts.now ?? T0, opts.maxMembers ?? 1000, opts.maxDetails ?? 10_000, opts.maxKeys ?? 64]);
  const commit = (sender: string, kind: "normal" | "control" = "normal") => callScript(c.client, "commitMessages", SCRIPT_KEYS.commitMessages(k), [1, k.outboxRef, hexId(), sender, encodeHistoryRest({
    messageId: hexToUuid(hexId()), senderId: hexToUuid(sender), kind, countsUnread: kind === "normal", createdAt: T0, contentType: "text/plain", payload: Buffer.from("hi"),
  })]);
  return { k, who, react, commit };
}

test("react: counts, summary_version and the who hash follow adds and removes; repeats change nothing", async () => {
  const c = new Conv(fx);
  const [a, b, d] = hexIds(3) as [string, string, string];
  await c.createGroup(a, [a, b, d].sort());
  const { k, who, react, commit } = setUp(c);
  assert.deepEqual((await commit(a)).slice(1, 3), [0, 1]);
  const writes = async () => JSON.stringify([await c.client.zrange(k.rxsum, "0", "-1"), await c.client.hgetall(who(1))]);

  // {code, version, detailRows, markerOnly, marked, key, count, ...}
  assert.deepEqual(await react(b, 1, "👍", true), [0, 1, 1, 0, 0, "👍", 1]);
  assert.deepEqual(await react(d, 1, "👍", true, { now: T0 + 5 }), [0, 2, 2, 0, 0, "👍", 2]);
  assert.deepEqual(await react(b, 1, "party", true), [0, 3, 3, 0, 0, "👍", 2, "party", 1]);
  const before = await writes();
  assert.deepEqual(await react(b, 1, "👍", true), [1, 3, 3, 0, 0, "👍", 2, "party", 1], "a repeated add: unchanged, same version");
  assert.deepEqual(await react(a, 1, "party", false), [1, 3, 3, 0, 0, "👍", 2, "party", 1], "a remove of nothing: unchanged");
  assert.equal(await writes(), before, "the repeats wrote nothing");
  // removes: 👍 2 → 1, then party 1 → gone (the key leaves the map, the version still grows)
  assert.deepEqual(await react(b, 1, "👍", false), [0, 4, 2, 0, 0, "👍", 1, "party", 1]);
  assert.deepEqual(await react(b, 1, "party", false), [0, 5, 1, 0, 0, "👍", 1]);
  assert.deepEqual(await c.client.hgetall(who(1)), { [`${d}\t👍`]: String(T0 + 5) }, "d's detail row with its time");
  assert.deepEqual(await react(d, 1, "👍", false), [0, 6, 0, 0, 0]);
  assert.deepEqual(await c.client.zrange(k.rxsum, "0", "-1"), ["1\t6\t0\t0"], "no counts, version 6 kept");
  assert.equal(await c.client.exists(who(1)), 0);
});

test("react: who may react, and to what; refusals write nothing", async () => {
  const c = new Conv(fx);
  const [a, b, stranger] = hexIds(3) as [string, string, string];
  await c.createGroup(a, [a, b].sort());
  const { k, react, commit } = setUp(c);
  await commit(a);
  const dump = async () => JSON.stringify([await c.client.zrange(k.rxsum, "0", "-1"), await c.client.keys(`${c.space.prefix}:*rxwho*`)]);
  const before = await dump();
  assert.deepEqual(await react(stranger, 1, "x", true), [-2], "never a member");
  assert.deepEqual(await react(a, 7, "x", true), [-20], "no seq 7");
  // b left (left_at 9): no longer ACTIVE
  await c.client.hset(k.grpmembers, b, "0|9|L");
  assert.deepEqual(await react(b, 1, "x", true), [-2], "a member who left");
  // a late joiner (joined_at 1) does not see seq 1
  await c.client.hset(k.grpmembers, b, "1||A");
  assert.deepEqual(await react(b, 1, "x", true), [-20], "seq 1 is before b's interval");
  // a recalled message
  const entry = (await c.client.zrangebyscore(k.hist, 1, 1))[0]!;
  await c.client.zremrangebyscore(k.hist, 1, 1);
  await c.client.zadd(k.hist, 1, entry.replace("|kind=N", "|kind=N|st=R"));
  assert.deepEqual(await react(a, 1, "x", true), [-23]);
  await c.client.zremrangebyscore(k.hist, 1, 1);
  await c.client.zadd(k.hist, 1, entry);
  // a dissolved group, then no group
  await c.client.hset(k.grpmeta, "dissolved_at", 5);
  assert.deepEqual(await react(a, 1, "x", true), [-15, 5]);
  await c.client.hdel(k.grpmeta, "dissolved_at");
  assert.equal(await dump(), before, "no refusal wrote anything");
  // the distinct keys' limit (2 here): a third key is refused, an existing one still counts
  assert.equal((await react(a, 1, "k1", true, { maxKeys: 2 }))[0], 0);
  assert.equal((await react(a, 1, "k2", true, { maxKeys: 2 }))[0], 0);
  assert.deepEqual(await react(a, 1, "k3", true, { maxKeys: 2 }), [-24, 2]);
  assert.deepEqual(await react(b, 1, "k1", true, { maxKeys: 2 }), [-20], "b still cannot see seq 1");
  await c.client.hdel(k.grpmeta, "version");
  assert.deepEqual(await react(a, 1, "x", true), [-3], "no group");
});

test("react: past the detail limits only the mark is kept; a recall deletes summary and who", async () => {
  const c = new Conv(fx);
  const users = hexIds(4) as [string, string, string, string];
  const [a, b, d, e] = users;
  await c.createGroup(a, [...users].sort());
  const { k, who, react, commit } = setUp(c);
  await commit(a);
  await commit(b);
  // the group has 4 members: with maxMembers 3 no detail row is written (the mark alone, marked = 1)
  assert.deepEqual(await react(b, 1, "x", true, { maxMembers: 3 }), [0, 1, 0, 1, 1, "x", 1]);
  assert.deepEqual(await c.client.hgetall(who(1)), { [`${b}\tx`]: "" });
  // within the member limit, at most maxDetails (1) detail rows: d gets one, e only the mark
  assert.deepEqual(await react(d, 2, "x", true, { maxDetails: 1 }), [0, 1, 1, 0, 0, "x", 1]);
  assert.deepEqual(await react(e, 2, "x", true, { maxDetails: 1 }), [0, 2, 1, 1, 1, "x", 2]);
  // removing a mark-alone reaction lowers markerOnly, not detailRows
  assert.deepEqual(await react(e, 2, "x", false, { maxDetails: 1 }), [0, 3, 1, 0, 0, "x", 1]);
  assert.deepEqual(await react(b, 1, "x", false), [0, 2, 0, 0, 0]);
  assert.equal((await react(b, 1, "y", true))[0], 0);

  // a's recall of seq 1: the event at seq 3, then step 2 with seq 1's who hash
  const event = encodeHistoryRest({
    messageId: hexToUuid(hexId()), senderId: hexToUuid(a), kind: "control", countsUnread: false, createdAt: T0 + 1, contentType: "qim.recall.v1", payload: Buffer.alloc(0), orderNeutral: true,
  });
  const r = await callScript(c.client, "commitAnchorEvent", [k.idem, k.grpmeta, k.grpmembers, k.cseq, k.hist, k.outbox, k.vpending], ["R", hexId(), a, "1", T0 + 1, 120_000, 1, event, k.outboxRef]);
  assert.deepEqual(r.slice(0, 2), [0, 3]);
  await assert.rejects(callScript(c.client, "applyAnchorEvent", [k.hist, k.unreadidx, k.rxsum, who(2)], [3, 2]), /targets 1, not 2/, "step 2 names its target's keys");
  assert.equal((await c.client.zrange(k.rxsum, "0", "-1")).length, 2, "a refused step 2 deleted nothing");
  assert.deepEqual(await callScript(c.client, "applyAnchorEvent", [k.hist, k.unreadidx, k.rxsum, who(1)], [3, 1]), [0]);
  // seq 2: d added, e added, e removed (version 3), d's detail row
  assert.deepEqual(await c.client.zrange(k.rxsum, "0", "-1"), ["2\t3\t1\t0\tx\t1"], "seq 1's summary gone, seq 2's kept");
  assert.equal(await c.client.exists(who(1)), 0);
  assert.equal(await c.client.exists(who(2)), 1);
  assert.deepEqual(await react(d, 1, "x", true), [-23], "a recalled message takes no reactions");
});
