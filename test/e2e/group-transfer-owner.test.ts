/**
 * Issue 24, `qimctl group transfer-owner` through the real CLI against the real admin server over
 * mTLS on a real redis-server: the owner that `membership remove` refuses can be handed over to a
 * member and then removed. Expected owners and versions follow from the operations here (create:
 * version 1; each transfer or membership event: +1), read back through `group show`.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { TestPkiName } from "../certs/fixture.js";
import { failed, ok, run, startE2eServer, type E2eServer, writeContext } from "./qimctl.js";

describe("qimctl group transfer-owner against the real server", { timeout: 180_000 }, () => {
  let dir: string;
  let e2e: E2eServer;
  const tenant = randomUUID();
  const ctx: Partial<Record<TestPkiName, string>> = {};

  const contextFor = (who: TestPkiName): string => writeContext(e2e, dir, tenant, who);
  const show = async (group: string) => ok(await run(["group", "show", "--group", group], { context: ctx.viewer! }), "group show");

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qimctl-transfer-"));
    e2e = await startE2eServer(dir);
    for (const who of ["operator", "viewer"] as const) ctx[who] = contextFor(who);
  });

  after(async () => {
    await e2e?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("plans, refuses, transfers once, says so on a re-run, and then the old owner can be removed", async () => {
    const owner = randomUUID();
    const member = randomUUID();
    const stranger = randomUUID();
    const group = ok(await run(["group", "create", "--owner", owner, "--member", member], { context: ctx.operator! }), "group create").group as string;
    const transfer = (to: string, ...more: string[]) => run(["group", "transfer-owner", "--group", group, "--to", to, ...more], { context: ctx.operator! });

    // before: the owner cannot be removed
    const refused = failed(await run(["membership", "remove", "--group", group, "--user", owner, "--yes"], { context: ctx.operator! }), 4, "remove the owner");
    assert.match(refused.message, /transfer ownership first/);

    assert.deepEqual(ok(await transfer(member, "--dry-run"), "dry run"), { tenant, group, outcome: "planned", previousOwner: owner, owner: member, version: 1, attempts: 1 });
    assert.deepEqual({ owner: (await show(group)).owner, version: (await show(group)).version }, { owner, version: 1 });

    const notMember = failed(await transfer(stranger), 4, "to a non-member");
    assert.equal(notMember.code, "FAILED_PRECONDITION");
    assert.match(notMember.message, new RegExp(`user ${stranger} is not a member of group ${group}`));
    failed(await run(["group", "transfer-owner", "--group", randomUUID(), "--to", member], { context: ctx.operator! }), 3, "no such group");
    assert.equal(failed(await transfer(member, "--expect-version", "2"), 4, "stale version").code, "VERSION_CONFLICT");
    failed(await run(["group", "transfer-owner", "--group", group, "--to", member], { context: ctx.viewer! }), 6, "viewer role");
    assert.deepEqual({ owner: (await show(group)).owner, version: (await show(group)).version }, { owner, version: 1 }, "no refusal changed anything");

    assert.deepEqual(ok(await transfer(member, "--expect-version", "1"), "transfer"), { tenant, group, outcome: "committed", previousOwner: owner, owner: member, version: 2, attempts: 1 });
    const after1 = await show(group);
    assert.deepEqual({ owner: after1.owner, version: after1.version, memberCount: after1.memberCount, conversationSeq: after1.conversationSeq }, { owner: member, version: 2, memberCount: 2, conversationSeq: 0 },
      "owner and version moved; no CONTROL message took a seq");

    // the same command again (its --expect-version 1 is stale now): succeeds and says so
    assert.deepEqual(ok(await transfer(member, "--expect-version", "1"), "re-run"), { tenant, group, outcome: "noop", previousOwner: member, owner: member, version: 2, attempts: 1 });
    const text = await run(["group", "transfer-owner", "--group", group, "--to", member], { context: ctx.operator!, json: false });
    assert.equal(text.code, 0);
    assert.equal(text.stdout, `${member} already owns group ${group}: nothing changed (version 2)\n`);

    // the former owner is an ordinary member now: removed as seq 1, version 3
    const removed = ok(await run(["membership", "remove", "--group", group, "--user", owner, "--yes"], { context: ctx.operator! }), "remove the former owner");
    assert.deepEqual({ seq: removed.eventConversationSeq, version: removed.version, memberCount: removed.memberCount }, { seq: 1, version: 3, memberCount: 1 });

    const audit = readFileSync(path.join(dir, "audit.log"), "utf8");
    assert.ok(audit.includes(`transferred group ${group} from ${owner} to ${member}; version 2`), audit);
  });
});
