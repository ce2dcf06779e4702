import assert from "node:assert/strict";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, it } from "node:test";
import { DenyList, normalizeFingerprint, parseDenyList } from "../../server/deny-list.js";

const FP = "1F:68:0A:BC:DE:F0:12:34:56:78:9A:BC:DE:F0:12:34:56:78:9A:BC:DE:F0:12:34:56:78:9A:BC:DE:F0:0B:0C";
const FP2 = "AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99";

describe("deny list format", () => {
  it("accepts the fingerprint as qimctl prints it, lower case, plain hex; # comments and blank lines; CRLF", () => {
    const text = `# revoked\r\n${FP}  # CN=alice, OU=admin\r\n\r\n   ${FP2.toLowerCase()}\n${FP.replace(/:/g, "")}\n`;
    assert.deepEqual([...parseDenyList(text)].sort(), [FP, FP2].sort());
    assert.equal(parseDenyList("").size, 0);
    assert.equal(parseDenyList("# nothing\n").size, 0);
  });

  it("names the first malformed line", () => {
    assert.throws(() => parseDenyList(`${FP}\n\nAA:BB\n`), /^DenyListSyntaxError: line 3: "AA:BB" is not a SHA-256 certificate fingerprint/);
    assert.throws(() => parseDenyList(`${FP} ${FP2}\n`), /line 1/, "two on one line");
    assert.throws(() => parseDenyList(`${FP.slice(0, -1)}G\n`), /line 1/);
    assert.equal(normalizeFingerprint("sha256:" + FP), null);
  });

  it("a reload that finds a malformed or empty file keeps the list in force and says why", async () => {
    const dir = await mkdtemp(join(tmpdir(), "qim-deny-"));
    const file = join(dir, "deny");
    const lines: string[] = [];
    try {
      await writeFile(file, `${FP}\n`);
      const list = await DenyList.open(file, { pollMs: 0, log: (l) => lines.push(l) });
      assert.ok(list.has(FP) && list.has(FP.toLowerCase()) && !list.has(FP2) && !list.has(""));
      await writeFile(file, `${FP2}\nnope\n`);
      await list.reload("test");
      assert.ok(list.has(FP) && !list.has(FP2));
      assert.match(lines.at(-1)!, /NOT reloaded \(test\): line 2: "nope" is not .*; the previous 1 fingerprint\(s\) stay in force$/);
      await writeFile(file, "");
      await list.reload("test");
      assert.ok(list.has(FP), "an empty file (a truncate before a write) lifts nothing");
      assert.match(lines.at(-1)!, /NOT reloaded \(test\): line 1: the file is empty/);
      await rm(file);
      await list.reload("test");
      assert.ok(list.has(FP));
      assert.match(lines.at(-1)!, /NOT reloaded \(test\): cannot read it: ENOENT/);
      await writeFile(file, `# none\n${FP2}\n`);
      await list.reload("test");
      assert.ok(!list.has(FP) && list.has(FP2));
      assert.match(lines.at(-1)!, /: 1 revoked certificate fingerprint\(s\) loaded \(test\)$/);
      await list.close();
      await assert.rejects(DenyList.open(join(dir, "missing"), { log: () => {} }), /cannot read it: ENOENT/);
      await writeFile(file, "junk\n");
      await assert.rejects(DenyList.open(file, { log: () => {} }), /line 1: "junk"/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
