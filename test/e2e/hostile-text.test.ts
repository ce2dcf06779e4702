/**
 * Issue 24 defect 5: a message whose text carries terminal escapes (OSC retitle, CSI clear screen,
 * a faked prompt on a new line, C1 CSI) and every bidirectional formatting character is read back
 * through the real `qimctl history` against a real server on a real redis-server. Table mode must
 * show none of them raw, only their visible escapes; JSON mode must keep the text exact.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { ok, run, startE2eServer, type E2eServer } from "./qimctl.js";

const BIDI = ["\u061c", "\u200e", "\u200f", "\u202a", "\u202b", "\u202c", "\u202d", "\u202e", "\u2066", "\u2067", "\u2068", "\u2069"];
const HOSTILE = [
  "hi",
  "\x1b]0;pwned\x07", // OSC: retitle the terminal
  "\x1b[2J\x1b[H", // CSI: clear the screen, cursor home
  "\r\n$ sudo rm -rf / ", // a faked prompt on a line of its own
  "\u009b31m", // C1 CSI
  "\x7f\x08",
  ...BIDI.map((c) => `${c}x`),
].join("");

/** Everything a terminal would act on: C0 but the newline, DEL, C1, line separators, bidi formatting. */
// eslint-disable-next-line no-control-regex
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/u;

describe("hostile message text in table output (issue 24, defect 5)", { timeout: 120_000 }, () => {
  let dir: string;
  let e2e: E2eServer;
  let context: string;
  let operator: string;
  const owner = randomUUID();
  let group = "";

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qimctl-hostile-"));
    e2e = await startE2eServer(dir);
    context = path.join(dir, "context.json");
    operator = path.join(dir, "operator.json");
    const tenant = randomUUID();
    writeFileSync(context, JSON.stringify({ endpoint: e2e.endpoint, ca: e2e.pki.ca.certPath, cert: e2e.pki.drill.certPath, key: e2e.pki.drill.keyPath, tenant }));
    writeFileSync(operator, JSON.stringify({ endpoint: e2e.endpoint, ca: e2e.pki.ca.certPath, cert: e2e.pki.operator.certPath, key: e2e.pki.operator.keyPath, tenant }));
    group = ok(await run(["group", "create", "--owner", owner], { context: operator }), "group create").group;
    ok(await run(["message", "send", "--group", group, "--as", owner, "--text", HOSTILE], { context }), "send the hostile text");
  });

  after(async () => {
    await e2e?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("history in table mode prints no control or bidi character, only their visible escapes", async () => {
    const r = await run(["history", "--group", group, "--as", owner], { context, json: false });
    assert.equal(r.code, 0, r.stderr);
    const bad = RAW_CONTROL.exec(r.stdout);
    assert.equal(bad, null, `raw U+${bad?.[0]?.codePointAt(0)?.toString(16).padStart(4, "0")} in stdout: ${JSON.stringify(r.stdout)}`);
    assert.ok(!r.stdout.includes("\x1b") && !r.stdout.includes("\x07"), "no ESC, no BEL");
    const row = r.stdout.split("\n").find((l) => l.includes("pwned"));
    assert.ok(row !== undefined, `the message's row: ${r.stdout}`);
    // one row: the faked prompt stays on the message's own line
    assert.ok(row.includes("sudo rm -rf"), row);
    for (const shown of ["\\x1b]0;pwned\\x07", "\\x1b[2J", "\\x9b31m", "\\x7f", "\\x08", ...BIDI.map((c) => `\\u${c.codePointAt(0)!.toString(16).padStart(4, "0")}`)]) {
      assert.ok(row.includes(shown), `${shown} shown in ${JSON.stringify(row)}`);
    }
  });

  it("history in JSON mode keeps the exact original text", async () => {
    const h = ok(await run(["history", "--group", group, "--as", owner], { context }), "history --output json");
    const texts = (h.records as { text: string | null }[]).map((x) => x.text);
    assert.ok(texts.includes(HOSTILE), `exact text among ${JSON.stringify(texts)}`);
  });
});
