/**
 * Issue 26, `qimctl retention show|set|run` through the real CLI against the real admin server over
 * mTLS on a real redis-server: a class with a count rule made the tenant's default, a group of 12
 * messages, a dry run that writes nothing, a round that trims, `show` with the group, a group's own
 * rule, roles and bad input refused with nothing changed, and the audit log. Expected values are
 * worked out by hand from what the test sent: keep 5 of 12 → the history starts at 12 − 5 + 1 = 8.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import type { TestPkiName } from "../certs/fixture.js";
import { failed, ok, run, startE2eServer, type E2eServer, writeContext } from "./qimctl.js";

describe("qimctl retention against the real server", { timeout: 180_000 }, () => {
  let dir: string;
  let e2e: E2eServer;
  const tenant = randomUUID();
  const ctx: Partial<Record<TestPkiName, string>> = {};
  const [alice, bob] = [randomUUID(), randomUUID()];
  let group: string;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qimctl-retention-"));
    e2e = await startE2eServer(dir);
    for (const who of ["admin", "operator", "viewer"] as const) ctx[who] = writeContext(e2e, dir, tenant, who);
    group = ok(await run(["group", "create", "--owner", alice, "--member", bob], { context: ctx.operator! }), "group create").group;
    for (let i = 1; i <= 12; i++) ok(await run(["message", "send", "--group", group, "--as", alice, "--text", `m${i}`], { context: ctx.admin! }), `send ${i}`);
  });

  after(async () => {
    await e2e?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const seqs = async () => (ok(await run(["history", "--group", group, "--as", alice, "--limit", "100"], { context: ctx.viewer! }), "history").records as { conversationSeq: number }[]).map((r) => r.conversationSeq);
  const range = (lo: number, hi: number) => Array.from({ length: hi - lo + 1 }, (_, i) => lo + i);

  it("a tenant without a policy: show says so; bad input and the viewer's changes are refused, nothing written", async () => {
    const none = ok(await run(["retention", "show"], { context: ctx.viewer! }), "show");
    assert.deepEqual([none.hasPolicy, none.classes, none.defaultClass], [false, [], null]);
    assert.equal(failed(await run(["retention", "set", "--class", "Bad Name", "--max-count", "5"], { context: ctx.operator! }), 2, "bad class").field, "--class");
    assert.equal(failed(await run(["retention", "set", "--class", "standard", "--max-age", "soon"], { context: ctx.operator! }), 2, "bad age").field, "--max-age");
    assert.equal(failed(await run(["retention", "set", "--class", "standard"], { context: ctx.operator! }), 2, "no rule").field, "--max-age");
    assert.equal(failed(await run(["retention", "set", "--group", group, "--default", "--class", "x"], { context: ctx.operator! }), 2, "--default with --group").field, "--default");
    assert.equal(failed(await run(["retention", "set", "--group", randomUUID(), "--max-count", "3"], { context: ctx.operator! }), 3, "no such group").code, "NOT_FOUND");
    failed(await run(["retention", "set", "--class", "standard", "--max-count", "5", "--default"], { context: ctx.viewer! }), 6, "viewer may not set");
    failed(await run(["retention", "run"], { context: ctx.viewer! }), 6, "viewer may not run");
    assert.equal(ok(await run(["retention", "show"], { context: ctx.viewer! }), "show").hasPolicy, false, "nothing was written");
    assert.deepEqual(await seqs(), range(1, 12));
  });

  it("set a default class keeping 5; a dry run shows 7 to go and removes nothing; a round trims to 8…12; show names the group's rule", async () => {
    const set = ok(await run(["retention", "set", "--class", "standard", "--max-count", "5", "--default"], { context: ctx.operator! }), "set");
    assert.deepEqual([set.hasPolicy, set.defaultClass, set.classes], [true, "standard", [{ name: "standard", rule: { maxAgeMs: 0, maxCount: 5 } }]]);
    // the relay marks the sends dispatched in the background: a conversation with records still pending is skipped
    let dry: any;
    for (let i = 0; i < 50; i++) {
      dry = ok(await run(["retention", "run", "--dry-run"], { context: ctx.operator! }), "dry run");
      if (dry.historyRemoved === 7) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(dry.dryRun, true);
    assert.equal(dry.historyRemoved, 7, JSON.stringify(dry));
    assert.deepEqual(dry.trims.map((t: any) => [t.group, t.source, t.earliestBefore, t.earliestAfter]), [[group, "class:standard", 1, 8]]);
    assert.deepEqual(await seqs(), range(1, 12), "a dry run removes nothing");
    const round = ok(await run(["retention", "run"], { context: ctx.operator! }), "run");
    assert.deepEqual([round.dryRun, round.historyRemoved, round.behind], [false, 7, 0]);
    assert.deepEqual(await seqs(), range(8, 12));
    const shown = ok(await run(["retention", "show", "--group", group], { context: ctx.viewer! }), "show --group");
    assert.deepEqual(shown.group, { group, retentionClass: null, rule: null, effectiveSource: "class:standard", effectiveRule: { maxAgeMs: 0, maxCount: 5 } });
  });

  it("a CMD channel whose recipients acknowledged part of it: a dry run names how far (ACKED TO), the round removes that much, and its ids stay", async () => {
    const u = randomUUID();
    const channel = `acks-${randomUUID().slice(0, 8)}`;
    for (let i = 1; i <= 4; i++) ok(await run(["cmd", "send", "--channel", channel, "--to", u, "--text", `c${i}`, "--client-msg-no", `a${i}`], { context: ctx.operator! }), `cmd send ${i}`);
    // the app syncs 2 of the 4 and acknowledges them: 1 and 2 may go, 3 and 4 stay
    const synced = ok(await run(["cmd", "sync", "--user", u, "--as-app", "--limit", "2"], { context: ctx.operator! }), "cmd sync");
    assert.deepEqual(synced.messages.map((m: { messageSeq: number }) => m.messageSeq), [1, 2]);
    ok(await run(["cmd", "ack", "--user", u], { context: ctx.operator! }), "cmd ack");
    const trimOf = (r: { cmdTrims: { channelId: string; ackedThrough: number; historyRemoved: number }[] }) => r.cmdTrims.find((t) => t.channelId === `${channel}____cmd`);
    const dry = ok(await run(["retention", "run", "--dry-run"], { context: ctx.operator! }), "dry run");
    assert.deepEqual([trimOf(dry)?.ackedThrough, trimOf(dry)?.historyRemoved], [2, 2], JSON.stringify(dry.cmdTrims));
    const text = await run(["retention", "run", "--dry-run"], { context: ctx.operator!, json: false });
    assert.match(text.stdout, new RegExp(`${channel}____cmd\\s+\\d+\\s+\\S+\\s+2\\s+2\\s`), "the table's ACKED TO and HISTORY columns");
    const round = ok(await run(["retention", "run"], { context: ctx.operator! }), "run");
    assert.equal(trimOf(round)?.historyRemoved, 2);
    // the rest is still there for the app, and a retry of an acknowledged one is its duplicate
    assert.deepEqual(ok(await run(["cmd", "sync", "--user", u], { context: ctx.operator! }), "peek").messages.map((m: { messageSeq: number }) => m.messageSeq), [3, 4]);
    const retry = ok(await run(["cmd", "send", "--channel", channel, "--to", u, "--text", "c1", "--client-msg-no", "a1"], { context: ctx.operator! }), "retry");
    assert.deepEqual([retry.duplicate, retry.message.messageSeq], [true, 1]);
  });

  it("a group's own rule wins; --clear goes back to the default class; the audit log has every change and run", async () => {
    const own = ok(await run(["retention", "set", "--group", group, "--max-count", "2", "--max-age", "30d"], { context: ctx.operator! }), "set --group");
    assert.deepEqual([own.group.effectiveSource, own.group.effectiveRule], ["group", { maxAgeMs: 30 * 86_400_000, maxCount: 2 }]);
    ok(await run(["retention", "run"], { context: ctx.operator! }), "run");
    assert.deepEqual(await seqs(), [11, 12]);
    const cleared = ok(await run(["retention", "set", "--group", group, "--clear"], { context: ctx.operator! }), "clear");
    assert.deepEqual([cleared.group.retentionClass, cleared.group.rule, cleared.group.effectiveSource], [null, null, "class:standard"]);
    const audit = readFileSync(path.join(dir, "audit.log"), "utf8").split("\n").filter((l) => l.includes("RetentionService"));
    for (const rpc of ["SetRetentionClass", "SetGroupRetention", "RunRetention"]) assert.ok(audit.some((l) => l.includes(rpc) && l.includes('"OK"')), `${rpc} audited: ${audit.join("\n")}`);
    assert.ok(audit.some((l) => l.includes("dry run, would remove")), "the dry run is audited as one");
  });
});
