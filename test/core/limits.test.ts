/**
 * The bounded limits of core/base/limits.ts (issue 25): a request's limit is bounded once, where it
 * enters, by these two functions. The expected values are spec 001's and spec 002's numbers,
 * written here by hand: a CMD sync's limit 0 (or below, or not a number) is 200, above 10,000 it
 * is 10,000, a fraction is cut; a conversation-list page's 0 is 50, 1 … 200 are themselves, 201
 * or a negative or fractional size is INVALID_ARGUMENT naming the field.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { cmdSyncLimit, InvalidArgumentError, pageLimit, SNAPSHOT_PAGE } from "../../core/base/index.js";

test("cmdSyncLimit: 0, negative and NaN are the default 200; above 10,000 is 10,000; a fraction is cut", () => {
  assert.deepEqual([0, -1, -10_000, Number.NaN, Number.POSITIVE_INFINITY].map(cmdSyncLimit), [200, 200, 200, 200, 200]);
  assert.deepEqual([1, 199, 200, 201, 10_000, 10_001, 2 ** 40].map(cmdSyncLimit), [1, 199, 200, 201, 10_000, 10_000, 10_000]);
  assert.equal(cmdSyncLimit(7.9), 7);
});

test("pageLimit over the conversation-list page: 0 is 50, 1 … 200 kept, 201, -1 and 1.5 refused naming the field", () => {
  assert.deepEqual([0, 1, 50, 199, 200].map((n) => pageLimit(n, SNAPSHOT_PAGE)), [50, 1, 50, 199, 200]);
  for (const bad of [201, 1000, -1, 1.5]) {
    assert.throws(() => pageLimit(bad, SNAPSHOT_PAGE), (err: unknown) => err instanceof InvalidArgumentError && err.field === "limit", String(bad));
  }
  assert.throws(() => pageLimit(201, SNAPSHOT_PAGE, "page_size"), (err: unknown) => err instanceof InvalidArgumentError && err.field === "page_size" && /at most 200/.test(err.message));
});
