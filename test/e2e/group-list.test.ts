/**
 * Issue 24, `qimctl group list` through the real CLI against the real admin server over mTLS on a
 * real redis-server: every group of the tenant, and only of the tenant, over pages of a bounded
 * scan; --owner follows a transfer. The expected groups and owners are the ones created here.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { TestPkiName } from "../certs/fixture.js";
import { failed, ok, run, startE2eServer, type E2eServer } from "./qimctl.js";

describe("qimctl group list against the real server", { timeout: 180_000 }, () => {
  let dir: string;
  let e2e: E2eServer;
  const tenant = randomUUID();
  const ctx: Partial<Record<string, string>> = {};

  const contextFor = (who: TestPkiName, t = tenant): string => {
    const file = path.join(dir, `context-${who}-${t}.json`);
    writeFileSync(file, JSON.stringify({ endpoint: e2e.endpoint, ca: e2e.pki.ca.certPath, tenant: t, cert: e2e.pki[who].certPath, key: e2e.pki[who].keyPath }));
    return file;
  };

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qimctl-group-list-"));
    e2e = await startE2eServer(dir);
    ctx.operator = contextFor("operator");
    ctx.viewer = contextFor("viewer");
    ctx.other = contextFor("operator", randomUUID());
  });

  after(async () => {
    await e2e?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("pages cover every group of the tenant once; --owner follows a transfer; --all", async () => {
    const x = randomUUID();
    const y = randomUUID();
    const owners = [x, x, y, y, y];
    const groups: string[] = [];
    for (const [i, o] of owners.entries()) {
      groups.push(ok(await run(["group", "create", "--owner", o, ...(i === 2 ? ["--member", x] : [])], { context: ctx.operator! }), "create").group as string);
    }
    // another tenant's group never shows
    ok(await run(["group", "create", "--owner", x], { context: ctx.other! }), "other tenant's group");
    // groups[2] goes from y to x (x is a member): version 2
    ok(await run(["group", "transfer-owner", "--group", groups[2]!, "--to", x], { context: ctx.operator! }), "transfer");
    const expected = new Map(groups.map((g, i) => [g, { owner: i === 2 ? x : owners[i]!, version: i === 2 ? 2 : 1, memberCount: i === 2 ? 2 : 1 }]));

    const seen = new Map<string, { owner: string; version: number; memberCount: number }>();
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: any = ok(await run(["group", "list", "--limit", "2", ...(cursor ? ["--cursor", cursor] : [])], { context: ctx.viewer! }), "a page");
      for (const g of page.groups) {
        assert.equal(g.tenant, tenant);
        seen.set(g.group, { owner: g.owner, version: g.version, memberCount: g.memberCount });
      }
      cursor = page.nextCursor;
      assert.ok(++pages < 1000, "the listing ends");
    } while (cursor !== null);
    assert.deepEqual([...seen].sort(), [...expected].sort());

    const all = ok(await run(["group", "list", "--all"], { context: ctx.viewer! }), "--all");
    // --all streams its pages: by id within a page, in no particular order across them
    assert.deepEqual(all.groups.map((g: any) => g.group).sort(), [...groups].sort());
    assert.equal(all.nextCursor, null);
    const ofX = ok(await run(["group", "list", "--owner", x, "--all"], { context: ctx.viewer! }), "--owner x");
    assert.deepEqual(ofX.groups.map((g: any) => g.group).sort(), [groups[0]!, groups[1]!, groups[2]!].sort());
    const ofY = ok(await run(["group", "list", "--owner", y, "--all"], { context: ctx.viewer! }), "--owner y");
    assert.deepEqual(ofY.groups.map((g: any) => g.group).sort(), [groups[3]!, groups[4]!].sort());

    failed(await run(["group", "list", "--cursor", "nope"], { context: ctx.viewer! }), 2, "bad cursor");
    failed(await run(["group", "list", "--owner", "x"], { context: ctx.viewer! }), 2, "bad owner");
  });
});
