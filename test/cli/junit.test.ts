/**
 * cli/junit.ts: what it writes is well-formed XML whatever the values hold, read back by an
 * independent parser (Python's xml.etree.ElementTree, test/harness/junit.ts) with every value as
 * it was — markup characters, quotes, newlines and tabs in attributes included — and the
 * characters XML 1.0 cannot carry at all written as visible \u{…} text. Counts follow the Ant
 * convention: `failures` is the number of failed test cases.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { junitXml } from "../../cli/junit.js";
import { parseJUnit } from "../harness/junit.js";

describe("JUnit XML", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "qimctl-junit-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const write = (xml: string) => {
    const f = path.join(dir, `${Math.random().toString(36).slice(2)}.xml`);
    writeFileSync(f, xml);
    return parseJUnit(f);
  };

  it("markup, quotes, apostrophes, newlines, tabs and non-ASCII come back exactly, in text and in attributes", () => {
    const nasty = `a<b>&c"d'e\n\tf\r\n漢字🙂 ]]> <!-- --> &amp;`;
    const parsed = write(junitXml({
      name: nasty, timestamp: "2026-11-29T23:28:36.112Z", time: 1.5,
      properties: [["value", nasty], ["n", 3], ["ok", false]],
      cases: [
        { classname: "c.x", name: nasty, failures: [{ type: nasty, message: nasty, text: nasty }, { type: "t2", message: "m2", text: "" }], systemOut: nasty },
        { classname: "c.x", name: "passes", failures: [] },
        { classname: "c.y", name: "passes too", failures: [], systemOut: "" },
      ],
    }));
    assert.equal(parsed.root, "testsuites");
    const s = parsed.suites[0]!;
    assert.equal(s.name, nasty);
    assert.deepEqual(s.properties, { value: nasty, n: "3", ok: "false" });
    assert.deepEqual([s.tests, s.failures, s.errors, s.skipped, parsed.rootTests, parsed.rootFailures], [3, 1, 0, 0, 3, 1]);
    assert.equal(s.timestamp, "2026-11-29T23:28:36");
    assert.equal(s.cases[0]!.name, nasty);
    assert.deepEqual(s.cases[0]!.failures, [{ type: nasty, message: nasty, text: nasty }, { type: "t2", message: "m2", text: "" }]);
    assert.equal(s.cases[0]!.systemOut, nasty);
    assert.deepEqual(s.cases.slice(1).map((c) => [c.name, c.failures.length]), [["passes", 0], ["passes too", 0]]);
  });

  it("characters XML 1.0 cannot hold (C0 controls, NUL, lone surrogates, U+FFFE) become visible \\u{…} text; the file still parses", () => {
    const bad = "x\u0000y\u0001z\u001b\ud800w\ufffe!";
    const parsed = write(junitXml({ name: "s", timestamp: "", time: 0, properties: [["p", bad]], cases: [{ classname: "c", name: bad, failures: [{ type: "t", message: bad, text: bad }] }] }));
    const shown = "x\\u{0}y\\u{1}z\\u{1b}\\u{d800}w\\u{fffe}!";
    const s = parsed.suites[0]!;
    assert.equal(s.properties.p, shown);
    assert.equal(s.cases[0]!.name, shown);
    assert.deepEqual(s.cases[0]!.failures[0], { type: "t", message: shown, text: shown });
    assert.equal(s.timestamp, "", "no timestamp rather than an invalid one");
  });
});
