/**
 * Token buckets (core/support/rate-limit.ts) on a clock the test moves; every expected value is
 * worked out by hand from the rate and the burst.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { KeyedRateLimiter, TokenBucket } from "../../core/support/index.js";

describe("token buckets", () => {
  it("a fresh bucket gives its burst, then says when the next token is there; the rate refills it, never past the burst", () => {
    let now = 1_000;
    const b = new TokenBucket({ rate: 5, burst: 3 }, () => now);
    assert.deepEqual([b.take(), b.take(), b.take()], [0, 0, 0]);
    // empty: one token takes 1000 / 5 = 200 ms
    assert.equal(b.take(), 200);
    now += 100; // half a token
    assert.equal(b.take(), 100);
    now += 100; // a whole one
    assert.equal(b.take(), 0);
    assert.equal(b.take(), 200);
    now += 60_000; // a minute refills 300 tokens, but the bucket holds 3
    assert.equal(b.full(), true);
    assert.deepEqual([b.take(), b.take(), b.take(), b.take()], [0, 0, 0, 200]);
  });

  it("wait() says the same as take() without taking", () => {
    let now = 0;
    const b = new TokenBucket({ rate: 2, burst: 1 }, () => now);
    assert.equal(b.wait(), 0);
    assert.equal(b.wait(), 0);
    assert.equal(b.take(), 0);
    assert.equal(b.wait(), 500);
    now += 499;
    assert.equal(b.wait(), 1);
    now += 1;
    assert.equal(b.take(), 0);
  });

  it("a refused take costs nothing: a client that keeps asking gets its token at the same time as one that waited", () => {
    let now = 0;
    const b = new TokenBucket({ rate: 10, burst: 1 }, () => now);
    b.take();
    for (let t = 0; t < 100; t += 10) {
      now = t;
      assert.equal(b.take(), 100 - t);
    }
    now = 100;
    assert.equal(b.take(), 0);
  });

  it("bad limits are refused", () => {
    assert.throws(() => new TokenBucket({ rate: 0, burst: 1 }), RangeError);
    assert.throws(() => new TokenBucket({ rate: 1, burst: 0 }), RangeError);
    assert.throws(() => new KeyedRateLimiter({ rate: Number.NaN, burst: 5 }), RangeError);
  });

  it("keyed: one bucket per key; full buckets are forgotten once the map passes its bound, active ones kept", () => {
    let now = 0;
    const k = new KeyedRateLimiter({ rate: 1, burst: 2 }, { sweepAbove: 3, sweepEveryMs: 0, now: () => now });
    assert.deepEqual([k.take("a"), k.take("a"), k.take("a")], [0, 0, 1000]);
    assert.equal(k.take("b"), 0, "b has its own bucket");
    assert.equal(k.wait("never-seen"), 0);
    k.take("c");
    assert.equal(k.size, 3);
    now += 1500; // a: 1.5 tokens, not full; b and c: full (2)
    k.take("d"); // past the bound: b and c are dropped, a is kept
    assert.equal(k.size, 2);
    assert.equal(k.wait("a"), 0);
    assert.deepEqual([k.take("a"), k.take("a")], [0, 500]);
    assert.equal(k.limitText, "1/s (burst 2)");
  });
});
