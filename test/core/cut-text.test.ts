/** cutText (core/base/text.ts): a message cut for the wire never ends on half a surrogate pair. Expected strings written out by hand. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { cutText } from "../../core/index.js";

test("cutText: short text unchanged; a long one cut with its length named; never half of an emoji", () => {
  assert.equal(cutText("abc", 3), "abc");
  assert.equal(cutText("abcdef", 3), "abc… (6 characters)");
  // "😀" is two UTF-16 units: a cut at 3 of "a😀😀" would end on the first half of the second
  assert.equal(cutText("a😀😀", 4), "a😀… (5 characters)");
  assert.equal(cutText("a😀😀", 3), "a😀… (5 characters)");
  const cut = cutText("😀".repeat(1000), 1999);
  assert.doesNotThrow(() => encodeURIComponent(cut));
  assert.equal(cut, `${"😀".repeat(999)}… (2000 characters)`);
});
