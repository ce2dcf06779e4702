/**
 * Issue 24: after a 1,000-user join, `qimctl history` printed the event's users on one ~37 KB line.
 * Through the real CLI against a real server on a real redis-server: a real 1,000-user join event
 * (one --from-file batch) and a 5,000-character message. In table mode every line stays within
 * the cell bound (cli/format.ts TABLE_CELL_MAX_CHARS) plus the other columns, the event is
 * summarised with its user count and how many are not shown, the long text is cut with its full
 * length; JSON keeps all 1,000 users and the whole text.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { ok, run, startE2eServer, writeContext, type E2eServer } from "./qimctl.js";

/** The bound the table keeps a cell to (TABLE_CELL_MAX_CHARS, restated: the test does not read it from the code). */
const CELL_MAX = 200;
/** SEQ, KIND and SENDER before the TEXT column: a 4-digit seq, "control" or "normal", a UUID, two spaces after each. */
const OTHER_COLUMNS = 4 + 2 + "control".length + 2 + 36 + 2;

const USERS = 1000;
const TEXT_CHARS = 5000;

describe("history tables after bulk events (issue 24)", { timeout: 180_000 }, () => {
  let dir: string;
  let e2e: E2eServer;
  let context: string;
  const owner = randomUUID();
  const users = Array.from({ length: USERS }, () => randomUUID()).sort();
  // one character repeated: its length is known without the code under test
  const longText = "a".repeat(TEXT_CHARS - 3) + " z!";
  let group = "";

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qimctl-history-bulk-"));
    e2e = await startE2eServer(dir);
    context = writeContext(e2e, dir, randomUUID(), "admin");
    group = ok(await run(["group", "create", "--owner", owner], { context }), "group create").group;
    const file = path.join(dir, "users.txt");
    writeFileSync(file, `${users.join("\n")}\n`);
    const add = await run(["membership", "add", "--group", group, "--from-file", file], { context, json: false });
    assert.equal(add.code, 0, add.stderr);
    ok(await run(["message", "send", "--group", group, "--as", owner, "--text", longText], { context }), "send the long text");
  });

  after(async () => {
    await e2e?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("JSON: the join event has all 1,000 users and the text is whole", async () => {
    const h = ok(await run(["history", "--group", group, "--as", owner], { context }), "history --output json");
    const records = h.records as { kind: string; text: string | null; membership: { op: string; users: string[] } | null }[];
    const join = records.find((r) => r.membership?.op === "join");
    assert.ok(join, JSON.stringify(records.map((r) => r.kind)));
    assert.equal(join.membership!.users.length, USERS);
    assert.deepEqual([...join.membership!.users].sort(), users);
    assert.ok(records.some((r) => r.text === longText), "the long text, exact");
  });

  it("table: no line longer than the other columns plus the cell bound; the event summarised, the text cut with its length", async () => {
    const r = await run(["history", "--group", group, "--as", owner], { context, json: false });
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.split("\n");
    const longest = Math.max(...lines.map((l) => l.length));
    assert.ok(longest <= OTHER_COLUMNS + CELL_MAX, `longest line ${longest} chars: ${lines.find((l) => l.length === longest)}`);
    const joinRow = lines.find((l) => / join /.test(l));
    assert.ok(joinRow, r.stdout);
    const m = / join 1,000 users: ((?:[0-9a-f-]{36}, )+)… \(\+([\d,]+)\)$/.exec(joinRow);
    assert.ok(m, joinRow);
    const shown = m[1]!.split(", ").filter((u) => u !== "");
    assert.ok(shown.length >= 1);
    // the users shown are the event's first ones, and the count of the rest adds up
    assert.deepEqual(shown, users.slice(0, shown.length));
    assert.equal(shown.length + Number(m[2]!.replace(/,/g, "")), USERS);
    const textRow = lines.find((l) => l.includes("aaaa"));
    assert.ok(textRow, r.stdout);
    assert.match(textRow, /a… \(5,000 chars\)$/);
  });
});
