/**
 * Issue 24, `qimctl group dissolve` through the real CLI against the real admin server over mTLS on
 * a real redis-server. Expected seqs and versions follow from the operations here, by hand:
 * create (version 1) | seq 1 a message | seq 2 the dissolve (version 2); read back through
 * `group show`, `group list`, `history` and `membership list`.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { TestPkiName } from "../certs/fixture.js";
import { failed, ok, run, startE2eServer, type E2eServer, writeContext } from "./qimctl.js";

describe("qimctl group dissolve against the real server", { timeout: 180_000 }, () => {
  let dir: string;
  let e2e: E2eServer;
  const tenant = randomUUID();
  const ctx: Partial<Record<TestPkiName, string>> = {};

  const show = async (group: string) => ok(await run(["group", "show", "--group", group], { context: ctx.viewer! }), "group show");

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qimctl-dissolve-"));
    e2e = await startE2eServer(dir);
    for (const who of ["admin", "operator", "viewer"] as const) ctx[who] = writeContext(e2e, dir, tenant, who);
  });

  after(async () => {
    await e2e?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("plans, needs --yes, dissolves once, says so on a re-run, and then refuses every change; members still read up to the event", async () => {
    const owner = randomUUID();
    const member = randomUUID();
    const group = ok(await run(["group", "create", "--owner", owner, "--member", member], { context: ctx.operator! }), "group create").group as string;
    ok(await run(["message", "send", "--group", group, "--as", member, "--text", "last words"], { context: ctx.admin! }), "send before");
    const dissolve = (...more: string[]) => run(["group", "dissolve", "--group", group, ...more], { context: ctx.operator! });
    const state = async () => {
      const g = await show(group);
      return { state: g.state, dissolvedAt: g.dissolvedAt, version: g.version, conversationSeq: g.conversationSeq };
    };

    assert.deepEqual(ok(await dissolve("--dry-run"), "dry run"),
      { tenant, group, outcome: "planned", owner, memberCount: 2, version: 1, dissolvedAt: null, messageId: null, attempts: 1 });
    const plan = await run(["group", "dissolve", "--group", group, "--dry-run"], { context: ctx.operator!, json: false });
    assert.equal(plan.code, 0);
    assert.match(plan.stdout, new RegExp(`^Dry run: would dissolve group ${group} \\(owner ${owner}\\) at version 1: one dissolve event to its 2 member\\(s\\)`));
    const noYes = failed(await dissolve(), 2, "without --yes and without a terminal");
    assert.equal(noYes.field, "--yes");
    failed(await run(["group", "dissolve", "--group", group, "--yes"], { context: ctx.viewer! }), 6, "viewer role");
    assert.equal(failed(await dissolve("--yes", "--expect-version", "2"), 4, "stale version").code, "VERSION_CONFLICT");
    failed(await run(["group", "dissolve", "--group", randomUUID(), "--yes"], { context: ctx.operator! }), 3, "no such group");
    failed(await run(["group", "dissolve", "--group", "nope", "--yes"], { context: ctx.operator! }), 2, "bad --group");
    assert.deepEqual(await state(), { state: "ACTIVE", dissolvedAt: null, version: 1, conversationSeq: 1 }, "no refusal changed anything");

    const done = ok(await dissolve("--yes", "--expect-version", "1"), "dissolve");
    assert.match(done.messageId, /^[0-9a-f-]{36}$/);
    assert.deepEqual(done, { tenant, group, outcome: "committed", owner, memberCount: 2, version: 2, dissolvedAt: 2, messageId: done.messageId, attempts: 1 });
    assert.deepEqual(await state(), { state: "DISSOLVED", dissolvedAt: 2, version: 2, conversationSeq: 2 });
    const listed = ok(await run(["group", "list", "--all"], { context: ctx.viewer! }), "group list").groups as { group: string; state: string }[];
    assert.deepEqual(listed.map((g) => [g.group, g.state]), [[group, "DISSOLVED"]]);
    const table = await run(["group", "list", "--all"], { context: ctx.viewer!, json: false });
    assert.match(table.stdout, new RegExp(`${group}.*DISSOLVED`));

    // the same command again, its --expect-version stale now: succeeds, says so, no second event
    assert.deepEqual(ok(await dissolve("--yes", "--expect-version", "1"), "re-run"), { ...done, outcome: "noop" });
    const text = await run(["group", "dissolve", "--group", group, "--yes"], { context: ctx.operator!, json: false });
    assert.equal(text.code, 0);
    assert.equal(text.stdout, `Group ${group} already was dissolved at conversation_seq 2: nothing changed (version 2)\n`);

    // nothing after it
    const refusal = `group ${group} was dissolved at conversation_seq 2`;
    for (const [args, what] of [
      [["message", "send", "--group", group, "--as", member, "--text", "too late"], "send"],
      [["membership", "add", "--group", group, "--user", randomUUID()], "add"],
      [["membership", "remove", "--group", group, "--user", member, "--yes"], "remove"],
      [["group", "transfer-owner", "--group", group, "--to", member], "transfer-owner"],
    ] as const) {
      const r = failed(await run([...args], { context: ctx.admin! }), 4, what);
      assert.deepEqual({ code: r.code, message: r.message }, { code: "FAILED_PRECONDITION", message: refusal }, what);
    }
    assert.deepEqual(await state(), { state: "DISSOLVED", dissolvedAt: 2, version: 2, conversationSeq: 2 }, "no refusal took a seq");

    // members read up to and including the event; the admin member list still answers
    const page = ok(await run(["history", "--group", group, "--as", member], { context: ctx.viewer! }), "history");
    assert.deepEqual(page.records.map((r: { conversationSeq: number; contentType: string; messageId: string }) => [r.conversationSeq, r.contentType]),
      [[1, "text/plain"], [2, "qim.group.v1"]]);
    assert.equal(page.records[1].messageId, done.messageId);
    assert.deepEqual(page.records[1].groupEvent, { op: "dissolve", actor: "00000000-0000-0000-0000-000000000000" });
    const historyTable = await run(["history", "--group", group, "--as", member], { context: ctx.viewer!, json: false });
    assert.match(historyTable.stdout, /group dissolved/);
    // the conversation stays in the owner's list, the dissolve event its head; the member's message
    // is the one unread (control messages never count)
    let row: any;
    for (let i = 0; i < 200 && row?.head?.conversationSeq !== 2; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 100));
      const list = ok(await run(["sessions", "--user", owner], { context: ctx.viewer! }), "sessions");
      row = list.summaries.find((x: { group: string }) => x.group === group);
    }
    assert.deepEqual({ head: row?.head?.conversationSeq, event: row?.head?.groupEvent?.op, unread: row?.unread }, { head: 2, event: "dissolve", unread: 1 });
    const members = ok(await run(["membership", "list", "--group", group], { context: ctx.viewer! }), "membership list");
    assert.equal(members.members.length, 2);

    const audit = readFileSync(path.join(dir, "audit.log"), "utf8");
    assert.ok(audit.includes(`dissolved group ${group} (owner ${owner}, 2 members) at conversation_seq 2; version 2`), audit);
  });
});
