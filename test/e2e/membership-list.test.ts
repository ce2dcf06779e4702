/**
 * Issue 22, through the real CLI against the real admin server over mTLS on a real redis-server:
 * `membership list` pages (--limit, --cursor) and streams (--all, table and JSON), and the group
 * size limit (groups.max_members, here 1,200) refuses an add or a --from-file input past it with
 * the limit named and nothing changed. The expected members are the ids this test adds.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { failed, ok, run, startE2eServer, writeContext, type E2eServer, type Run } from "./qimctl.js";

const MAX = 1200;

/** The summary (last JSON line) of a successful `membership add --from-file`. */
function summaryOf(r: Run, what: string): any {
  assert.equal(r.code, 0, `${what}: exit ${r.code}\n${r.stderr}`);
  const lines = r.stdout.trim().split("\n");
  const summary = JSON.parse(lines[lines.length - 1]!);
  assert.equal(summary.type, "summary");
  assert.equal(summary.outcome, "completed");
  return summary;
}

describe("membership list pages and the group size limit", { timeout: 300_000 }, () => {
  let dir: string;
  let e2e: E2eServer;
  let operator: string;
  let viewer: string;
  const tenant = randomUUID();
  const owner = randomUUID();
  let group: string;
  let users: string[];
  const file = (name: string, lines: string[]) => {
    const p = path.join(dir, name);
    writeFileSync(p, `${lines.join("\n")}\n`);
    return p;
  };

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qimctl-member-list-"));
    e2e = await startE2eServer(dir, { engine: { maxGroupMembers: MAX } });
    operator = writeContext(e2e, dir, tenant, "operator");
    viewer = writeContext(e2e, dir, tenant, "viewer");
    group = ok(await run(["group", "create", "--owner", owner], { context: operator }), "group create").group as string;
    users = Array.from({ length: 1100 }, () => randomUUID());
    summaryOf(await run(["membership", "add", "--group", group, "--from-file", file("users.txt", users)], { context: operator, timeoutMs: 120_000 }), "bulk add");
    ok(await run(["membership", "remove", "--group", group, "--user", users[0]!, "--yes"], { context: operator }), "remove one");
  });

  after(async () => {
    await e2e?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("--limit and --cursor page through every member; --all streams them, as JSON or as a table", async () => {
    const everyone = new Set([owner, ...users]);
    const seen = new Map<string, string>();
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: any = ok(await run(["membership", "list", "--group", group, "--limit", "100", ...(cursor ? ["--cursor", cursor] : [])], { context: viewer }), "a page");
      assert.ok(page.members.length <= 200, `page of ${page.members.length}`);
      assert.equal(page.memberCount, everyone.size - 1);
      for (const m of page.members) seen.set(m.userId, m.state);
      cursor = page.nextCursor;
      assert.ok(++pages < 1000, "the listing ends");
    } while (cursor !== null);
    assert.ok(pages > 2, `${pages} pages`);
    assert.deepEqual(new Set(seen.keys()), everyone);
    assert.equal(seen.get(users[0]!), "REMOVED");

    const all = await run(["membership", "list", "--group", group, "--all"], { context: viewer, maxBuffer: 16 * 1024 * 1024 });
    const doc = ok(all, "--all --json");
    assert.deepEqual(new Set(doc.members.map((m: any) => m.userId)), everyone);
    assert.equal(doc.nextCursor, null);
    assert.equal(doc.memberCount, everyone.size - 1);
    // written as it goes: one member per line
    assert.ok(all.stdout.split("\n").length >= everyone.size, "a line per member");

    const table = await run(["membership", "list", "--group", group, "--all"], { context: viewer, json: false, maxBuffer: 16 * 1024 * 1024 });
    assert.equal(table.code, 0, table.stderr);
    const lines = table.stdout.trimEnd().split("\n");
    assert.match(lines[0]!, new RegExp(`^Group ${group} at version \\d+: ${everyone.size - 1} current member`));
    assert.match(lines[1]!, /^USER\s+STATE\s+JOINED AT\s+LEFT AT$/);
    const rows = lines.slice(2).map((l) => l.split(/\s+/));
    assert.deepEqual(new Set(rows.map((r) => r[0])), everyone);
    assert.ok(rows.every((r) => r.length === 4 && /^(ACTIVE|REMOVED)$/.test(r[1]!)));
    assert.match(table.stderr, /row\(s\) listed/);

    failed(await run(["membership", "list", "--group", group, "--all", "--cursor", "5"], { context: viewer }), 2, "--all with --cursor");
    assert.equal(failed(await run(["membership", "list", "--group", group, "--limit", "1001"], { context: viewer }), 2, "--limit past the budget").field, "--limit");
    assert.equal(failed(await run(["membership", "list", "--group", group, "--cursor", "next"], { context: viewer }), 2, "bad --cursor").field, "--cursor");
    failed(await run(["membership", "list", "--group", randomUUID()], { context: viewer }), 3, "no such group");
  });

  it("the group size limit: an add past it and a --from-file input larger than it are refused with the limit named, nothing changed", async () => {
    const shown = ok(await run(["group", "show", "--group", group], { context: operator }), "group show");
    assert.equal(shown.maxMembers, MAX);
    const count = shown.memberCount as number; // 1,100: the owner and 1,099 added users
    const tooMany = Array.from({ length: MAX - count + 1 }, () => randomUUID());
    // the input itself fits the limit: its batch is sent, and the server refuses it (the summary line says failed)
    const over = await run(["membership", "add", "--group", group, "--from-file", file("over.txt", tooMany)], { context: operator });
    assert.equal(over.code, 4, over.stderr);
    assert.equal(JSON.parse(over.stdout.trim().split("\n").pop()!).outcome, "failed");
    const refused = (JSON.parse(over.stderr) as { error: { code: string; message: string } }).error;
    assert.equal(refused.code, "FAILED_PRECONDITION");
    assert.match(refused.message, new RegExp(`groups\\.max_members = ${MAX}`));
    const bigFile = failed(await run(["membership", "add", "--group", group, "--from-file", file("big.txt", Array.from({ length: MAX + 1 }, () => randomUUID()))], { context: operator }), 4, "a file past the limit");
    assert.equal(bigFile.field, "--from-file");
    assert.match(bigFile.message, new RegExp(`names ${MAX + 1} distinct users.*at most ${MAX}`));
    const after = ok(await run(["group", "show", "--group", group], { context: operator }), "group show after");
    assert.deepEqual([after.version, after.memberCount], [shown.version, shown.memberCount], "nothing changed");
    // exactly up to the limit is fine
    const fits = summaryOf(await run(["membership", "add", "--group", group, "--from-file", file("fits.txt", tooMany.slice(1))], { context: operator }), "up to the limit");
    assert.equal(fits.memberCount, MAX);
  });
});
