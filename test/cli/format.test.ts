/**
 * Table cells are bounded (issue 24): cli/format.ts cellText() cuts a cell past
 * TABLE_CELL_MAX_CHARS with an ellipsis and the text's full length, never leaving half an escape;
 * history's membershipText() summarises a long user list with whole UUIDs and the count left out.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { cellText, table, TABLE_CELL_MAX_CHARS } from "../../cli/format.js";
import { membershipText } from "../../cli/history/text.js";

describe("bounded table cells", () => {
  it("a cell at the bound is shown whole; one character more is cut to the bound with its length", () => {
    assert.equal(TABLE_CELL_MAX_CHARS, 200);
    const at = "x".repeat(200);
    assert.equal(cellText(at), at);
    const over = cellText("x".repeat(201));
    // "… (201 chars)" is 13 characters: 187 x's before it
    assert.equal(over, `${"x".repeat(187)}… (201 chars)`);
    assert.equal(Array.from(over).length, 200);
    assert.equal(cellText("y".repeat(12_345), 40), `${"y".repeat(24)}… (12,345 chars)`);
  });

  it("counts characters, not UTF-16 units, and never ends in half an escape", () => {
    assert.equal(cellText("😀".repeat(30), 20), `${"😀".repeat(8)}… (30 chars)`);
    // "ab" then U+202E (shown as the 6 characters \u202e): a cut inside the escape drops it whole
    const cut = cellText(`ab\u202e${"c".repeat(50)}`, 16);
    assert.equal(cut, "ab… (53 chars)");
  });

  it("table() bounds every cell", () => {
    const t = table(["A", "B"], [["1", "z".repeat(500)]]);
    assert.equal(t.split("\n")[1], `1  ${"z".repeat(187)}… (500 chars)`);
  });

  it("membershipText: the whole list when it fits, else whole UUIDs that fit and how many more", () => {
    const u = (i: number) => `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`;
    assert.equal(membershipText("join", [u(1), u(2)]), `join ${u(1)}, ${u(2)}`);
    const many = Array.from({ length: 1000 }, (_, i) => u(i));
    // "join 1,000 users: " (18) + 4 × (36 + 2) = 170, and "… (+996)" (8) = 178 ≤ 200; a fifth would make 216
    assert.equal(membershipText("join", many), `join 1,000 users: ${many.slice(0, 4).join(", ")}, … (+996)`);
  });
});
