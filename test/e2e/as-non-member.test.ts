/**
 * Issue 24: a send or a conversation action an operator makes "as" a user who is not a member
 * says so (FAILED_PRECONDITION, exit 4), and "as" anyone in a group that does not exist says that
 * (exit 3) — not "permission denied" (exit 6), which reads as a certificate problem, even with an
 * admin certificate. The user's rule of ADR-0021 §3 stays: history as a never-member and history
 * of a missing group are the same PERMISSION_DENIED. Through the real CLI, real server, real redis.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { TestPkiName } from "../certs/fixture.js";
import { failed, ok, run, startE2eServer, type E2eServer, writeContext } from "./qimctl.js";

describe("qimctl acting as a non-member against the real server", { timeout: 180_000 }, () => {
  let dir: string;
  let e2e: E2eServer;
  const tenant = randomUUID();
  const ctx: Partial<Record<TestPkiName, string>> = {};

  const contextFor = (who: TestPkiName): string => writeContext(e2e, dir, tenant, who);

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qimctl-as-non-member-"));
    e2e = await startE2eServer(dir);
    for (const who of ["admin", "operator", "drill"] as const) ctx[who] = contextFor(who);
  });

  after(async () => {
    await e2e?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("send and conversation actions say 'not a member' (exit 4) or 'no such group' (exit 3); history keeps the user's rule", async () => {
    const owner = randomUUID();
    const member = randomUUID();
    const stranger = randomUUID();
    const missing = randomUUID();
    const group = ok(await run(["group", "create", "--owner", owner, "--member", member], { context: ctx.operator! }), "group create").group as string;
    // member removed as the group's first record: seq 1
    assert.equal(ok(await run(["membership", "remove", "--group", group, "--user", member, "--yes"], { context: ctx.operator! }), "remove").eventConversationSeq, 1);
    const send = (g: string, as: string, who: TestPkiName) => run(["message", "send", "--group", g, "--as", as, "--text", "hi"], { context: ctx[who]! });

    for (const who of ["admin", "drill"] as const) {
      const never = failed(await send(group, stranger, who), 4, `${who}: send as a never-member`);
      assert.equal(never.code, "FAILED_PRECONDITION");
      assert.equal(never.message, `user ${stranger} is not a member of group ${group} (never was one)`);
      const removed = failed(await send(group, member, who), 4, `${who}: send as a removed member`);
      assert.equal(removed.message, `user ${member} is not a member of group ${group} (removed at conversation_seq 1)`);
      assert.equal(failed(await send(missing, owner, who), 3, `${who}: send to no such group`).code, "NOT_FOUND");
    }
    const pin = failed(await run(["conversation", "pin", "--group", group, "--as", stranger], { context: ctx.operator! }), 4, "pin as a never-member");
    assert.equal(pin.message, `user ${stranger} is not a member of group ${group} (never was one)`);
    failed(await run(["conversation", "mute", "--group", missing, "--as", stranger], { context: ctx.operator! }), 3, "mute in no such group");

    // nothing was written by the refusals: the only record is still the removal, seq 1
    assert.equal(ok(await run(["group", "show", "--group", group], { context: ctx.operator! }), "show").conversationSeq, 1);
    assert.equal(ok(await send(group, owner, "drill"), "the owner sends").conversationSeq, 2);

    // history is the user's view: a never-member and a missing group stay indistinguishable
    const h1 = failed(await run(["history", "--group", group, "--as", stranger], { context: ctx.admin! }), 6, "history as a never-member");
    const h2 = failed(await run(["history", "--group", missing, "--as", stranger], { context: ctx.admin! }), 6, "history of no such group");
    assert.deepEqual([h1.code, h1.message], [h2.code, h2.message]);
  });
});
