/**
 * parseDurationMs (core/base): the one duration parser of the server's settings (parseDuration,
 * 1s–365d), the CLI's retention ages (1s–3650d) and token TTLs. Values worked out by hand.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { DAY_MS, parseDurationMs } from "../../core/index.js";

test("parseDurationMs: units ms s m h d (none: seconds), decimals, any case and padding; off and 0 are 0", () => {
  const any = (t: string) => parseDurationMs(t, 1, 10_000 * DAY_MS);
  assert.equal(any("1500ms"), 1_500);
  assert.equal(any("90"), 90_000);
  assert.equal(any("90s"), 90_000);
  assert.equal(any("30m"), 1_800_000);
  assert.equal(any("1.5h"), 5_400_000);
  assert.equal(any(" 2D "), 172_800_000);
  assert.equal(any("0.0015s"), 2, "rounded to whole ms");
  assert.equal(any("off"), 0);
  assert.equal(any("OFF"), 0);
  assert.equal(any("0"), 0);
});

test("parseDurationMs: not a duration, or outside the range, is null; the ends of the range pass", () => {
  const r = (t: string) => parseDurationMs(t, 1000, 365 * DAY_MS);
  for (const bad of ["", "soon", "-5s", "5 s", "1e3", "5w", "1h30m", "s", "1.s", "999ms", "366d", "31536001"]) assert.equal(r(bad), null, bad);
  assert.equal(r("1s"), 1000);
  assert.equal(r("1000ms"), 1000);
  assert.equal(r("365d"), 31_536_000_000);
  assert.equal(r("31536000"), 31_536_000_000, "365 days in seconds");
});
