/** core/support's bounds on work in flight: Limiter (callers arriving over time) and eachLimited (a list). */
import assert from "node:assert/strict";
import { test } from "node:test";
import { eachLimited, Limiter } from "../../core/support/index.js";

/** A promise and the function that settles it. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open = () => {};
  const wait = new Promise<void>((r) => { open = r; });
  return { wait, open };
}

test("Limiter: never more than its limit running; the waiting start in arrival order; a failure frees its slot", async () => {
  const limiter = new Limiter(2);
  const gates = Array.from({ length: 5 }, gate);
  const started: number[] = [];
  let peak = 0;
  const runs = gates.map((g, i) => limiter.run(async () => {
    started.push(i);
    peak = Math.max(peak, limiter.running);
    await g.wait;
    if (i === 1) throw new Error("call 1 fails");
    return i;
  }));
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(started, [0, 1], "two at once");
  gates[1]!.open(); // the failing one
  await assert.rejects(runs[1]!, /call 1 fails/);
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(started, [0, 1, 2], "its slot went to the first waiter");
  for (const i of [0, 2, 3, 4]) gates[i]!.open();
  assert.deepEqual(await Promise.all([runs[0], runs[2], runs[3], runs[4]]), [0, 2, 3, 4]);
  assert.deepEqual(started, [0, 1, 2, 3, 4]);
  assert.equal(peak, 2);
  assert.equal(limiter.running, 0, "every slot freed at the end");
});

test("eachLimited: every item once, at most the limit at once, the first failure thrown after all settled", async () => {
  let running = 0;
  let peak = 0;
  const seen: number[] = [];
  await assert.rejects(eachLimited([1, 2, 3, 4, 5, 6, 7], 3, async (n) => {
    running++;
    peak = Math.max(peak, running);
    await new Promise((r) => setTimeout(r, 1));
    seen.push(n);
    running--;
    if (n === 2 || n === 5) throw new Error(`item ${n}`);
  }), /item 2/);
  assert.deepEqual(seen.sort(), [1, 2, 3, 4, 5, 6, 7]);
  assert.equal(peak, 3);
});
