/**
 * LiveThrottle (core/conversation-list/live-throttle.ts): a watched user's live rows are
 * published at once for the first change after a quiet interval, and once more at the interval's
 * end for everything that came during it. The intervals are ended by hand here (an injected
 * timer), so each expected publication below is worked out from the calls, not from a clock.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { LiveThrottle, parseUuid, registry, type LiveTimer } from "../../../core/index.js";

const T = parseUuid("00000000-0000-4000-8000-000000000001", "tenant");
const U = parseUuid("00000000-0000-4000-8000-0000000000aa", "user");
const V = parseUuid("00000000-0000-4000-8000-0000000000bb", "user");

/** A timer whose intervals end only when the test says so. */
function handTimer(): { timer: LiveTimer; pending: () => number; end: (i?: number) => void } {
  const timers: { fn: () => void; live: boolean }[] = [];
  return {
    timer: (fn) => {
      const t = { fn, live: true };
      timers.push(t);
      return () => { t.live = false; };
    },
    pending: () => timers.filter((t) => t.live).length,
    end: (i = timers.findIndex((t) => t.live)) => {
      const t = timers[i]!;
      assert.ok(t.live, "the interval ended is running");
      t.live = false;
      t.fn();
    },
  };
}

const merged = async () => (await registry.getSingleMetric("qim_conversation_list_live_merged_total")!.get()).values[0]?.value ?? 0;

test("the first change is published at once, the interval's changes once at its end, per user", async () => {
  const h = handTimer();
  const published: [string, string[]][] = [];
  const live = new LiveThrottle(150, (_t, user, hexes) => published.push([user, hexes]), h.timer);
  const merged0 = await merged();

  live.offer(T + U, T, U, ["a"]);
  assert.deepEqual(published, [[U, ["a"]]], "a lone change: no wait");
  // during U's interval: b, then a and b again — nothing published for U; V is not held up by U
  live.offer(T + U, T, U, ["b"]);
  live.offer(T + U, T, U, ["a", "b"]);
  live.offer(T + V, T, V, ["c"]);
  assert.deepEqual(published, [[U, ["a"]], [V, ["c"]]]);
  assert.equal(live.size, 2);

  // U's interval ends: b and a together (in the order they came), and a new interval starts
  h.end(0);
  assert.deepEqual(published.at(-1), [U, ["b", "a"]]);
  assert.equal(published.length, 3);
  assert.equal(live.size, 2);
  // that interval ends with nothing waiting: nothing published, U is quiet again
  h.end(2);
  assert.equal(published.length, 3);
  assert.equal(live.size, 1);
  live.offer(T + U, T, U, ["d"]);
  assert.deepEqual(published.at(-1), [U, ["d"]], "after a quiet interval: at once again");

  // one read saved: the offer of [a, b] joined b's wait (b's own offer is the read that is due)
  assert.equal(await merged() - merged0, 1);

  // stop drops what waits: no publication after it, even if a timer fired late
  live.offer(T + U, T, U, ["e"]);
  live.stop();
  assert.equal(live.size, 0);
  assert.equal(h.pending(), 0, "every interval cancelled");
  assert.equal(published.length, 4);
});

test("interval 0 publishes every change at once", () => {
  const h = handTimer();
  const published: string[][] = [];
  const live = new LiveThrottle(0, (_t, _u, hexes) => published.push(hexes), h.timer);
  live.offer(T + U, T, U, ["a"]);
  live.offer(T + U, T, U, ["a", "b"]);
  assert.deepEqual(published, [["a"], ["a", "b"]]);
  assert.equal(h.pending(), 0);
});
