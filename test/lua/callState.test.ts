/**
 * lua/rtc/callState-1.lua called raw (spec 003 §5, issue 28): one user's call mark — ring when none
 * (the same call again is fine, another call is busy), answer only the same call (state A, the
 * longer expiry), end only the same call. A call is its id and the peer: the same id with another
 * peer (a third member who picked it) is another call. Expected values worked out by hand.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { callScript, KeySpace, newUuid, rtcCallKey } from "../../core/index.js";
import { useRedis } from "./helpers.js";

const fx = useRedis();

test("callState: ring, busy, answer, end, each only for its own call", async () => {
  const key = rtcCallKey(new KeySpace(`l${newUuid().slice(0, 8)}`), newUuid(), newUuid());
  const client = fx.store.clientFor(key);
  const run = (op: string, call: string, mark = "", ttl = 0) => callScript(client, "callState", [key], [op, call, mark, ttl]);
  assert.deepEqual(await run("answer", "c1|peer"), [-26], "nothing rings");
  assert.deepEqual(await run("ring", "c1|peer", "c1|peer|grp|R", 60_000), [0]);
  assert.equal(await client.get(key), "c1|peer|grp|R");
  const ttl = await client.pttl(key);
  assert.ok(ttl > 59_000 && ttl <= 60_000, `ring expiry ${ttl}`);
  assert.deepEqual(await run("ring", "c1|peer", "c1|peer|grp|R", 60_000), [1], "the same call again");
  assert.deepEqual(await run("ring", "c2|other", "c2|other|grp|R", 60_000), [-25, "c1"], "busy with c1");
  assert.deepEqual(await run("ring", "c1|other", "c1|other|grp|R", 60_000), [-25, "c1"], "c1's id with another peer is another call: busy");
  assert.deepEqual(await run("answer", "c2|other"), [-26], "c2 is not this user's call");
  assert.deepEqual(await run("answer", "c1|other"), [-26], "nor is c1 with another peer");
  assert.deepEqual(await run("end", "c2|other"), [1], "ending another call changes nothing");
  assert.deepEqual(await run("end", "c1|other"), [1], "a third member with c1's id ends nothing");
  assert.equal(await client.get(key), "c1|peer|grp|R");
  assert.deepEqual(await run("answer", "c1|peer", "", 4 * 3_600_000), [0]);
  assert.equal(await client.get(key), "c1|peer|grp|A");
  assert.ok(await client.pttl(key) > 3_600_000, "an answered call keeps its mark longer");
  assert.deepEqual(await run("end", "c1|peer"), [0]);
  assert.equal(await client.exists(key), 0);
  assert.deepEqual(await run("end", "c1|peer"), [1], "again: nothing");
  await assert.rejects(run("dance", "c1"), /unknown op/);
});
