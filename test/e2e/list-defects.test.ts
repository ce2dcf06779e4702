/**
 * Issue 23's defects 1 and 3 as an operator meets them: the real CLI against the real admin server
 * over mTLS on a real redis-server, with the issue's own steps. Expected values by hand from spec
 * 002 §3.1 and §7 (in the comments). Defect 2 (the 200 rule on every path) needs 202 messages and
 * is tested in test/core/conversation-list/audit-defects.test.ts.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { ok, run, startE2eServer, type E2eServer, writeContext } from "./qimctl.js";

describe("issue 23: delete before any message, and history and summaries after clear and delete, through qimctl", { timeout: 300_000 }, () => {
  let dir: string;
  let e2e: E2eServer;
  let context = "";
  const tenant = randomUUID();

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qimctl-list-defects-"));
    e2e = await startE2eServer(dir);
    context = writeContext(e2e, dir, tenant, "admin");
  });

  after(async () => {
    await e2e?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const cli = async (args: string[], what: string) => ok(await run(args, { context }), what);
  /** `sessions --user U` until `done` holds (the list consumer writes after its compaction window). */
  const sessionsUntil = async (user: string, done: (s: any) => boolean) => {
    let last: any;
    for (let i = 0; i < 200; i++) {
      last = await cli(["sessions", "--user", user], "sessions");
      if (done(last)) return last;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.fail(`sessions never reached the expected state: ${JSON.stringify(last)}`);
  };

  it("defect 1: conversation delete before any message, then one message: listed with unread 1, badge 1; a second: 2", async () => {
    const [owner, user] = [randomUUID(), randomUUID()];
    const { group } = await cli(["group", "create", "--owner", owner, "--member", user], "group create");
    const deleted = await cli(["conversation", "delete", "--as", user, "--group", group, "--yes"], "conversation delete");
    // spec 002 §7: deleted_before = head.latest, and there is no message
    assert.equal(deleted.row.deletedBeforeConversationSeq, 0);
    assert.equal(deleted.row.deleted, true);
    await cli(["message", "send", "--group", group, "--as", owner, "--text", "1"], "send 1");
    let s = await sessionsUntil(user, (x) => x.summaries.length === 1 && x.summaries[0].unread === 1);
    assert.equal(s.summaries[0].group, group);
    assert.equal((await cli(["badge", "show", "--user", user], "badge")).totalUnread, 1);
    await cli(["message", "send", "--group", group, "--as", owner, "--text", "2"], "send 2");
    s = await sessionsUntil(user, (x) => x.summaries[0]?.unread === 2);
    assert.equal((await cli(["badge", "show", "--user", user], "badge")).totalUnread, 2);
    const h = await cli(["history", "--group", group, "--as", user], "history");
    assert.deepEqual(h.records.map((r: any) => r.conversationSeq), [1, 2]);
  });

  for (const action of ["clear", "delete"] as const) {
    it(`defect 3: after conversation ${action} of 3 messages, sessions --group shows unread 0 and no head, history shows nothing`, async () => {
      const [owner, user] = [randomUUID(), randomUUID()];
      const { group } = await cli(["group", "create", "--owner", owner, "--member", user], "group create");
      for (const t of ["1", "2", "3"]) await cli(["message", "send", "--group", group, "--as", owner, "--text", t], `send ${t}`);
      await sessionsUntil(user, (x) => x.summaries[0]?.unread === 3);
      await cli(["conversation", action, "--as", user, "--group", group, ...(action === "delete" ? ["--yes"] : [])], action);
      // by hand: watermark 3 → base 3: unread 0, no head at or below 3, no record
      const summary = (await cli(["sessions", "--user", user, "--group", group], "sessions --group")).summaries[0];
      assert.equal(summary.unread, 0);
      assert.equal(summary.head, null);
      const h = await cli(["history", "--group", group, "--as", user], "history");
      assert.deepEqual(h.records, []);
      assert.equal(h.earliestAvailableConversationSeq, 4);
      // the owner did nothing: all three are theirs to read
      assert.deepEqual((await cli(["history", "--group", group, "--as", owner], "history as owner")).records.map((r: any) => r.conversationSeq), [1, 2, 3]);
      await cli(["message", "send", "--group", group, "--as", owner, "--text", "4"], "send 4");
      const after4 = (await cli(["sessions", "--user", user, "--group", group], "sessions --group")).summaries[0];
      assert.deepEqual([after4.unread, after4.head?.conversationSeq], [1, 4]);
      assert.deepEqual((await cli(["history", "--group", group, "--as", user], "history")).records.map((r: any) => r.conversationSeq), [4]);
    });
  }
});
