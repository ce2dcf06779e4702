import { test } from "node:test";
import assert from "node:assert/strict";
import { callScript, newUuid } from "../../core/index.js";
import { useRedis } from "./helpers.js";

const fx = useRedis();

test("readLog: the watermark numbers, the first record's id and the records after a position — not XINFO's whole first and last records", async () => {
  const key = `rl:{d001}:${newUuid()}`;
  const client = fx.store.clientFor("{d001}");
  const read = (start: string, count: number) => callScript(client, "readLog", [key], [start, count]);
  const read2 = (start: string, count: number, known: string[]) => callScript(client, "readLog", [key], [start, count, ...known]);
  // no stream yet
  assert.deepEqual(await read("-", 10), [0, 0, 0, "0-0", "", []]);
  for (let i = 1; i <= 5; i++) await client.xadd(key, `100-${i}`, "s", String(i));
  // by hand: 5 added, 5 kept, the last id 100-5, the first 100-1; after 100-2 with COUNT 2: 100-3, 100-4
  assert.deepEqual(await read("(100-2", 2), [1, 5, 5, "100-5", "100-1", [["100-3", ["s", "3"]], ["100-4", ["s", "4"]]]]);
  // known (id, seq) pairs come back bare (the caller has their bodies): 100-3 known, 100-4 not, 100-9 not in the range
  assert.deepEqual(await read2("(100-2", 2, ["100-3", "3", "100-9", "9"]), [1, 5, 5, "100-5", "100-1", ["100-3", ["100-4", ["s", "4"]]]]);
  // an id the caller holds with another seq (a record that reused the id) comes whole
  assert.deepEqual(await read2("(100-2", 2, ["100-3", "7", "100-4", "4"]), [1, 5, 5, "100-5", "100-1", [["100-3", ["s", "3"]], "100-4"]]);
  // COUNT 0: the numbers only
  assert.deepEqual(await read("-", 0), [1, 5, 5, "100-5", "100-1", []]);
  // two trimmed away: length 3, entries-added still 5 (low watermark 2), the first kept 100-3
  await client.xtrim(key, "MINID", "100-3");
  assert.deepEqual(await read("-", 1), [1, 3, 5, "100-5", "100-3", [["100-3", ["s", "3"]]]]);
  // all trimmed: no first record, the counters stay
  await client.xtrim(key, "MAXLEN", 0);
  assert.deepEqual(await read("-", 10), [1, 0, 5, "100-5", "", []]);
});
