import { test } from "node:test";
import assert from "node:assert/strict";
import { callScript, newUuid } from "../../core/index.js";
import { useRedis } from "./helpers.js";

const fx = useRedis();

test("appendRecords: each record's fields XADDed in the order given, the ids answered in that order after the id of the record before them", async () => {
  const key = `ar:{d002}:${newUuid()}`;
  const client = fx.store.clientFor("{d002}");
  // three records of 2, 4 and 1 field pairs: count, then the names and values
  const [previous, ...ids] = (await callScript(client, "appendRecords", [key], [4, "s", "1", "e", "x|y", 8, "s", "2", "r", "", "k", "3", "p", "m", 2, "s", "3"])).map(String);
  // a new stream: nothing before the batch
  assert.equal(previous, "");
  assert.equal(ids.length, 3);
  const range = await client.xrange(key, "-", "+");
  // by hand: what XRANGE holds is exactly the three records, in order, with the answered ids
  assert.deepEqual(range, [
    [ids[0], ["s", "1", "e", "x|y"]],
    [ids[1], ["s", "2", "r", "", "k", "3", "p", "m"]],
    [ids[2], ["s", "3"]],
  ]);
  // the next batch follows the newest record, whoever appended it
  const other = await client.xadd(key, "*", "s", "4");
  const [after, id5] = (await callScript(client, "appendRecords", [key], [2, "s", "5"])).map(String);
  assert.equal(after, other);
  assert.deepEqual((await client.xrange(key, "-", "+")).map(([id]) => id), [...ids, other, id5]);
  // nothing to append: no stream written, no ids
  const empty = `ar:{d002}:${newUuid()}`;
  assert.deepEqual(await callScript(client, "appendRecords", [empty], []), []);
  assert.equal(await client.exists(empty), 0);
});
