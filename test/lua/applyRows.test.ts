import { test } from "node:test";
import assert from "node:assert/strict";
import { callScript, LUA_STATUS, newUuid, uuidToHex } from "../../core/index.js";
import { useRedis } from "./helpers.js";

const fx = useRedis();

/** A row with the fields the script reads: state (3), muted (8), archived (9), unread (13), mentions (16). */
const row = (o: { state?: string; muted?: boolean; archived?: boolean; unread: number; mentions: number }) =>
  ["0", "", o.state ?? "A", "0", "0", "0", "", o.muted ? 1 : 0, o.archived ? 1 : 0, "", "1", "1", o.unread, "0", "1", o.mentions, "", "0"].join("|");

function keys() {
  const id = uuidToHex(newUuid());
  return [`ar:{u001}:rows:${id}`, `ar:{u001}:badge:${id}`, `ar:{u001}:prefs:${id}`, `ar:{u001}:version:${id}`];
}

test("applyRows: badge moves by contributions in the same step; versions stamp rows; CAS refuses a moved row", async () => {
  const client = fx.store.clientFor("{u001}");
  const k = keys();
  const run = (args: (string | number)[]) => callScript(client, "applyRows", k, args);
  // two rows: a plain one (3 unread, 1 mention) and a muted one (2 unread)
  let r = await run([0, "e1", 0, "c1", "", row({ unread: 3, mentions: 1 }), 1, "", "c2", "", row({ unread: 2, mentions: 0, muted: true }), 1, "0|0||1|0"]);
  assert.deepEqual(r, [0, 1, 3, 1, 2]);
  assert.equal(await client.hget(k[2]!, "c2"), "0|0||1|0");
  const stored = (await client.hget(k[0]!, "c1"))!;
  assert.ok(stored.endsWith("|1|e1"));
  // a stale expected row: nothing written
  r = await run([0, "e2", 0, "c1", "not-this", row({ unread: 0, mentions: 0 }), 1, ""]);
  assert.deepEqual(r, [LUA_STATUS.ROW_MOVED, 1]);
  assert.equal(await client.get(k[3]!), "1");
  // archive c1 (unread leaves total_unread, mentions stay), include_muted on: c2 counts
  r = await run([1, "e3", 0, "c1", stored, row({ unread: 3, mentions: 1, archived: true }), 1, ""]);
  // deltas: c1 −3 unread; include_muted changes only rows written — so the total is 0 by deltas
  assert.deepEqual(r, [0, 2, 0, 1, 2]);
  // a full recompute (reconcile) applies include_muted to every row: c2's 2 count
  r = await run([1, "e4", 1]);
  assert.deepEqual(r, [0, 3, 2, 1, 2]);
  // (the same policy from here on: a changed policy needs a full recompute, as above)
  // dropping a row (deleted) removes its contribution; a LEFT row contributes no mentions
  const c2 = (await client.hget(k[0]!, "c2"))!;
  r = await run([1, "e5", 0, "c2", c2, "", 0, "", "c3", "", row({ unread: 4, mentions: 2, state: "L" }), 1, ""]);
  assert.deepEqual(r, [0, 4, 0, 1, 0]);
  assert.equal(await client.hexists(k[0]!, "c2"), 0);
  // one counter with the live frames: versions a live frame drew (INCR of the same key, up to 9
  // here) are never stamped again, so the next stored version is 10, not 5
  await client.set(k[3]!, 9);
  r = await run([1, "e6", 0, "c3", (await client.hget(k[0]!, "c3"))!, row({ unread: 5, mentions: 2, state: "L" }), 1, ""]);
  assert.deepEqual(r, [0, 10, 0, 1, 0]);
  assert.ok((await client.hget(k[0]!, "c3"))!.endsWith("|10|e6"));
  assert.equal(await client.get(k[3]!), "10");
});
