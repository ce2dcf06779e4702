/**
 * The conversation-list operator surface through the real CLI against the real admin server over
 * mTLS on a real redis-server: `sessions` pages (pinned first, --cursor, --all), `sessions watch`
 * (JSON lines: the badge first, then deltas as they happen; Ctrl+C exits 130), `badge
 * show|reconcile`, `unread audit`, `conversation <action> --as U` (audited; delete needs --yes
 * without a terminal). Every expected unread and order is counted here from the messages the test
 * sent; every JSON output is checked against the locked contract by run().
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { TestPkiName } from "../certs/fixture.js";
import { outputMismatch } from "../cli/contract.js";
import { listKeys, parseUuid, RedisStore, uuidToHex } from "../../core/index.js";
import { baseEnv, failed, ok, QIMCTL, ROOT, run, startE2eServer, type E2eServer, writeContext } from "./qimctl.js";

describe("qimctl sessions, sessions watch, badge, unread audit, conversation against the real server", { timeout: 300_000 }, () => {
  let dir: string;
  let e2e: E2eServer;
  const tenant = randomUUID();
  const ctx: Partial<Record<TestPkiName, string>> = {};
  const owner = randomUUID();
  const user = randomUUID();
  let a = "";
  let b = "";

  const contextFor = (who: TestPkiName): string => writeContext(e2e, dir, tenant, who);
  const send = async (group: string, text: string) => ok(await run(["message", "send", "--group", group, "--as", owner, "--text", text], { context: ctx.drill! }), "message send");
  /** `sessions` until `done` holds (the list consumer writes rows after its compaction window), bounded by attempts. */
  const sessionsUntil = async (done: (s: any) => boolean, args: string[] = []) => {
    let last: any;
    for (let i = 0; i < 200; i++) {
      last = ok(await run(["sessions", "--user", user, ...args], { context: ctx.viewer! }), "sessions");
      if (done(last)) return last;
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.fail(`sessions never reached the expected state: ${JSON.stringify(last)}`);
  };

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qimctl-sessions-"));
    e2e = await startE2eServer(dir);
    for (const who of ["operator", "viewer", "drill"] as const) ctx[who] = contextFor(who);
    a = ok(await run(["group", "create", "--owner", owner, "--member", user], { context: ctx.operator! }), "group create").group;
    b = ok(await run(["group", "create", "--owner", owner, "--member", user], { context: ctx.operator! }), "group create").group;
    // by hand: a gets 2 messages, then b 1 (b is newer): b first, then a; unread 1 and 2
    await send(a, "a1");
    await send(a, "a2");
    await send(b, "b1");
  });

  after(async () => {
    await e2e?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("sessions lists newest activity first with unread; --limit 1 pages with --cursor; --all walks both", async () => {
    const s = await sessionsUntil((x) => x.summaries.length === 2 && x.summaries.every((y: any) => y.unread > 0) && x.summaries[0].group === b);
    assert.deepEqual(s.summaries.map((x: any) => [x.group, x.unread, x.unreadExact, x.mentions, x.pinned, x.muted, x.archived, x.state]), [
      [b, 1, true, 0, false, false, false, "ACTIVE"],
      [a, 2, true, 0, false, false, false, "ACTIVE"],
    ]);
    assert.equal(s.summaries[0].head.conversationSeq, 1);
    assert.equal(s.summaries[1].head.conversationSeq, 2);
    assert.equal(s.nextCursor, null);
    assert.equal(s.total, 2);
    const p1 = ok(await run(["sessions", "--user", user, "--limit", "1"], { context: ctx.viewer! }), "page 1");
    assert.deepEqual(p1.summaries.map((x: any) => x.group), [b]);
    assert.equal(typeof p1.nextCursor, "string");
    const p2 = ok(await run(["sessions", "--user", user, "--limit", "1", "--cursor", p1.nextCursor], { context: ctx.viewer! }), "page 2");
    assert.deepEqual(p2.summaries.map((x: any) => x.group), [a]);
    assert.equal(p2.nextCursor, null);
    assert.equal(p2.projectionComplete, true);
    const all = ok(await run(["sessions", "--user", user, "--all", "--limit", "1"], { context: ctx.viewer! }), "--all");
    assert.deepEqual(all.summaries.map((x: any) => x.group), [b, a]);
    assert.equal(all.nextCursor, null);
    // --group still reads the groups directly, without the list engine
    const g = ok(await run(["sessions", "--user", user, "--group", a], { context: ctx.viewer! }), "--group");
    assert.deepEqual(g.summaries.map((x: any) => [x.group, x.unread, x.pinned]), [[a, 2, null]]);
  });

  it("bad --cursor exits 2 naming it: refused locally when not base64url, by the server when not a cursor of this list", async () => {
    assert.equal(failed(await run(["sessions", "--user", user, "--cursor", "not a cursor!"], { context: ctx.viewer! }), 2, "local").field, "--cursor");
    const server = failed(await run(["sessions", "--user", user, "--cursor", "AAAA"], { context: ctx.viewer! }), 2, "server");
    assert.equal(server.code, "INVALID_ARGUMENT");
    assert.equal(failed(await run(["sessions", "--user", user, "--cursor", "x", "--all"], { context: ctx.viewer! }), 2, "exclusive").exitCode, 2);
  });

  it("sessions watch prints the badge, then a pin and a new message as deltas and badge frames; Ctrl+C exits 130", async () => {
    const child = spawn(process.execPath, [QIMCTL, "sessions", "watch", "--user", user, "--output", "json"], { cwd: ROOT, env: { ...baseEnv, QIMCTL_CONTEXT: ctx.viewer! } });
    let stdout = "";
    let stderr = "";
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const lines = () => stdout.split("\n").filter((l) => l.length > 0).map((l) => JSON.parse(l));
    const waitFor = async (ok: (ls: any[]) => boolean) => {
      for (let i = 0; i < 300 && !ok(lines()); i++) await new Promise((r) => setTimeout(r, 50));
      assert.ok(ok(lines()), `watch printed: ${stdout}\nstderr: ${stderr}`);
    };
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    try {
      await waitFor((ls) => ls.length >= 1);
      assert.deepEqual(lines()[0].kind, "badge");
      assert.equal(lines()[0].badge.totalUnread, 3);
      assert.equal(lines()[0].previousVersion, 0);

      const pinned = ok(await run(["conversation", "pin", "--group", a, "--as", user, "--rank", "0"], { context: ctx.operator! }), "pin");
      assert.equal(pinned.row.pinRank, 0);
      await waitFor((ls) => ls.some((l) => l.kind === "delta" && l.row.group === a && l.row.pinRank === 0));
      await send(b, "b2");
      // by hand: b now has 2 unread, a 2: total 4
      await waitFor((ls) => ls.some((l) => l.kind === "delta" && l.row.group === b && l.row.unread === 2) && ls.some((l) => l.kind === "badge" && l.badge.totalUnread === 4));
      // each frame's previousVersion is the version of the frame before it
      const ls = lines();
      for (let i = 1; i < ls.length; i++) assert.equal(ls[i].previousVersion, Math.max(...ls.slice(0, i).map((l: any) => l.version)));
      assert.equal(outputMismatch(["sessions", "watch"], stdout), undefined);
      child.kill("SIGINT");
      assert.equal(await exited, 130);
    } finally {
      child.kill("SIGKILL");
    }

    const s = await sessionsUntil((x) => x.summaries[0]?.group === a && x.summaries[1]?.unread === 2);
    assert.deepEqual(s.summaries.map((x: any) => [x.group, x.pinned, x.pinRank, x.unread]), [[a, true, 0, 2], [b, false, null, 2]]);
  });

  it("badge show and reconcile; unread audit; mute, clear, delete (--yes without a terminal), audited; viewers may not act", async () => {
    const badge = ok(await run(["badge", "show", "--user", user], { context: ctx.viewer! }), "badge show");
    assert.deepEqual([badge.totalUnread, badge.totalMention, badge.mutedUnread], [4, 0, 0]);
    const rec = ok(await run(["badge", "reconcile", "--user", user], { context: ctx.operator! }), "badge reconcile");
    assert.equal(rec.driftedRows, 0);
    assert.equal(rec.after.totalUnread, 4);
    const audit = ok(await run(["unread", "audit", "--sample-rate", "1"], { context: ctx.viewer! }), "unread audit");
    assert.equal(audit.drifted, 0);
    assert.equal(audit.sampleRate, 1);
    assert.equal(failed(await run(["unread", "audit", "--sample-rate", "1.5"], { context: ctx.viewer! }), 2, "bad rate").field, "--sample-rate");

    // drift: the user's row of a made idle for 48 h with a cached unread of 5 (by hand the definition is 2)
    const store = new RedisStore({ kind: "instances", addrs: [e2e.redis.addr] });
    const lk = listKeys(e2e.server.runtime.keys, parseUuid(tenant, "tenant"), parseUuid(user, "user"));
    const aHex = uuidToHex(parseUuid(a, "a"));
    const rawRow = (await store.clientFor(lk.tag).hget(lk.rows, aHex))!;
    const f = rawRow.split("|");
    assert.equal(f[12], "2");
    f[12] = "5";
    f[17] = String(Date.now() - 48 * 3_600_000);
    await store.clientFor(lk.tag).hset(lk.rows, aHex, f.join("|"));
    try {
      const drift = await run(["unread", "audit", "--sample-rate", "1"], { context: ctx.viewer! });
      assert.equal(drift.code, 4, drift.stderr);
      const report = JSON.parse(drift.stdout);
      assert.deepEqual([report.drifted, report.sampled], [1, 1]);
      assert.deepEqual(report.drifts.map((d: any) => [d.user, d.group, d.cachedUnread, d.definitionalUnread]), [[user, a, 5, 2]]);
      assert.equal(JSON.parse(drift.stderr).error.code, "UNREAD_DRIFT");
      const text = await run(["unread", "audit", "--sample-rate", "1"], { context: ctx.viewer!, json: false });
      assert.equal(text.code, 4);
      assert.match(text.stdout, /1 drifted/);
      assert.match(text.stdout, new RegExp(`${user} +${a} +5 +2`));
      assert.match(text.stderr, /^Error: unread audit: 1 of 1 sampled row\(s\) drifted/);
    } finally {
      await store.clientFor(lk.tag).hset(lk.rows, aHex, rawRow);
      await store.close();
    }

    assert.equal(ok(await run(["conversation", "mute", "--group", b, "--as", user], { context: ctx.operator! }), "mute").row.muted, true);
    const muted = ok(await run(["badge", "show", "--user", user], { context: ctx.viewer! }), "badge after mute");
    assert.deepEqual([muted.totalUnread, muted.mutedUnread], [2, 2]);
    const cleared = ok(await run(["conversation", "clear", "--group", b, "--as", user], { context: ctx.operator! }), "clear");
    assert.deepEqual([cleared.row.unread, cleared.row.deleted, cleared.row.hiddenBeforeConversationSeq], [0, false, 2]);

    const refused = failed(await run(["conversation", "delete", "--group", a, "--as", user], { context: ctx.operator! }), 2, "delete without --yes");
    assert.equal(refused.field, "--yes");
    assert.equal(failed(await run(["conversation", "pin", "--group", b, "--as", user], { context: ctx.viewer! }), 6, "viewer").exitCode, 6);
    let s = ok(await run(["sessions", "--user", user], { context: ctx.viewer! }), "sessions after refusals");
    assert.deepEqual(s.summaries.map((x: any) => [x.group, x.unread, x.muted, x.head?.conversationSeq ?? null]), [[a, 2, false, 2], [b, 0, true, null]]);

    const deleted = ok(await run(["conversation", "delete", "--group", a, "--as", user, "--yes"], { context: ctx.operator! }), "delete");
    assert.equal(deleted.row.deleted, true);
    s = ok(await run(["sessions", "--user", user], { context: ctx.viewer! }), "sessions after delete");
    assert.deepEqual(s.summaries.map((x: any) => x.group), [b]);

    const entries = (await e2e.server.audit.tail(1000)).filter((e) => e.rpc.endsWith("/ChangeConversation") || e.rpc.endsWith("/ReconcileBadge"));
    // the pin of the watch test, then: reconcile, mute, clear, (delete without --yes: never sent), the viewer's pin, delete
    assert.deepEqual(entries.map((e) => [e.rpc.split("/").pop(), e.result]), [
      ["ChangeConversation", "OK"], ["ReconcileBadge", "OK"], ["ChangeConversation", "OK"], ["ChangeConversation", "OK"], ["ChangeConversation", "PERMISSION_DENIED"], ["ChangeConversation", "OK"],
    ]);
  });
});
