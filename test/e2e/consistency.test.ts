/**
 * Issue 24's consistency items as an operator meets them: the real CLI against the real admin
 * server over mTLS on a real redis-server.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { watchText } from "../../cli/sessions/text.js";
import { unreadAuditText } from "../../cli/unread/text.js";
import { failed, ok, run, startE2eServer, type E2eServer, writeContext } from "./qimctl.js";

const MAX_U64 = "18446744073709551615";

describe("issue 24: consistency of qimctl's flags and outputs", { timeout: 300_000 }, () => {
  let dir: string;
  let e2e: E2eServer;
  let context = "";
  const tenant = randomUUID();

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qimctl-consistency-"));
    e2e = await startE2eServer(dir);
    context = writeContext(e2e, dir, tenant, "admin");
  });

  after(async () => {
    await e2e?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const cli = async (args: string[], what: string) => ok(await run(args, { context }), what);

  it("uint64 flags take the whole range: history --after 2^64-1 is an empty page, --expect-version past 2^53 a conflict naming it in full", async () => {
    const [owner, user] = [randomUUID(), randomUUID()];
    const { group } = await cli(["group", "create", "--owner", owner, "--member", user], "group create");
    await cli(["message", "send", "--group", group, "--as", owner, "--text", "1"], "send");
    const h = await cli(["history", "--group", group, "--as", user, "--after", MAX_U64], "history --after max");
    assert.deepEqual(h.records, []);
    assert.equal((await cli(["history", "--group", group, "--as", user, "--after", "0"], "history")).records.length, 1);
    for (const v of ["9007199254740993", MAX_U64]) {
      const e = failed(await run(["membership", "add", "--group", group, "--user", randomUUID(), "--expect-version", v], { context }), 4, `--expect-version ${v}`);
      assert.equal(e.code, "VERSION_CONFLICT");
      assert.match(e.message, new RegExp(`expected ${v}\\b`));
    }
    // the group did not change
    assert.equal((await cli(["group", "show", "--group", group], "group show")).version, 1);
  });

  it("out of range: exit 2 naming the flag, before any connection", async () => {
    const bad: Array<[string[], string]> = [
      [["history", "--group", randomUUID(), "--as", randomUUID(), "--after", "18446744073709551616"], "--after"],
      [["history", "--group", randomUUID(), "--as", randomUUID(), "--after", "-1"], "--after"],
      [["membership", "add", "--group", randomUUID(), "--user", randomUUID(), "--expect-version", "0"], "--expect-version"],
      [["membership", "add", "--group", randomUUID(), "--user", randomUUID(), "--expect-version", "18446744073709551616"], "--expect-version"],
      [["cmd", "ack", "--user", randomUUID(), "--last-seq", MAX_U64], "--last-seq"],
      [["cluster", "owner", "--partition", "4294967296"], "--partition"],
    ];
    for (const [args, flag] of bad) {
      // no server behind this endpoint: a connection would be exit 5
      const r = await run(args, { json: false, env: { QIMCTL_ENDPOINT: "127.0.0.1:1", QIMCTL_TENANT: tenant, QIMCTL_INSECURE: "1" } });
      assert.equal(r.code, 2, `${args.join(" ")}: exit ${r.code}\n${r.stderr}`);
      assert.ok(r.stderr.includes(flag), `${args.join(" ")}: names ${flag}: ${r.stderr}`);
      assert.doesNotMatch(r.stderr, /serialization/);
    }
  });

  it("tables spell each field with its JSON words: badge show, user groups, membership list, sessions print no snake_case label", async () => {
    const [owner, user] = [randomUUID(), randomUUID()];
    const { group } = await cli(["group", "create", "--owner", owner, "--member", user], "group create");
    await cli(["message", "send", "--group", group, "--as", owner, "--text", "1"], "send");
    const text = async (args: string[]) => {
      const r = await run(args, { context, json: false });
      assert.equal(r.code, 0, `${args.join(" ")}: ${r.stderr}`);
      return r.stdout;
    };
    const badge = await text(["badge", "show", "--user", user]);
    assert.match(badge, /^total unread: +\d+$/m);
    assert.match(badge, /^total mention: +\d+$/m);
    assert.match(badge, /^muted unread: +\d+$/m);
    for (const args of [["badge", "show", "--user", user], ["user", "groups", "--user", user], ["membership", "list", "--group", group], ["sessions", "--user", user], ["sessions", "--user", user, "--group", group]]) {
      assert.doesNotMatch(await text(args), /_/, `${args.join(" ")}: a snake_case label`);
    }
    assert.match(await text(["membership", "list", "--group", group]), /USER +STATE +JOINED AT +LEFT AT/);
  });

  it("sessions watch and unread audit lines: the JSON words too", () => {
    const badge = watchText({ kind: "badge", version: 2, previousVersion: 1, drivingEventId: null, row: null, badge: { totalUnread: 3, totalMention: 1, mutedUnread: 0, version: 2 } });
    assert.equal(badge, "v2 (after v1) badge totalUnread=3 totalMention=1 mutedUnread=0");
    const audit = unreadAuditText({ sampleRate: 1, idleMs: 0, usersScanned: 1, candidates: 1, sampled: 1, drifted: 1, driftRatio: 1, drifts: [{ tenant, user: randomUUID(), group: randomUUID(), cachedUnread: 2, definitionalUnread: 1, cachedMentions: 0, definitionalMentions: 0 }] });
    assert.match(audit, /CACHED UNREAD +DEFINITIONAL UNREAD +CACHED MENTIONS +DEFINITIONAL MENTIONS/);
  });

  it("--mention takes comma lists like --member: each named user counts the mention once; over 100 distinct is exit 2 naming it", async () => {
    const [owner, a, b, c] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const { group } = await cli(["group", "create", "--owner", owner, "--member", `${a},${b}`, "--member", c], "group create");
    await cli(["message", "send", "--group", group, "--as", owner, "--text", "hi", "--mention", `${a},${b}`, "--mention", `${c},${a}`], "send");
    for (const u of [a, b, c]) {
      let mentions: unknown;
      for (let i = 0; i < 200 && mentions !== 1; i++) {
        if (i > 0) await new Promise((r) => setTimeout(r, 100));
        mentions = (await cli(["badge", "show", "--user", u], "badge")).totalMention;
      }
      assert.equal(mentions, 1, `user ${u}: one mention`);
    }
    const many = Array.from({ length: 101 }, () => randomUUID()).join(",");
    const r = await run(["message", "send", "--group", group, "--as", owner, "--text", "x", "--mention", many], { context, json: false });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /--mention/);
  });

  it("context current: the name, endpoint, tenant and certificate paths of the context in use, table and JSON; exit 3 when none", async () => {
    const xdg = path.join(dir, "xdg-current");
    const env = { XDG_CONFIG_HOME: xdg };
    const none = failed(await run(["context", "current"], { env }), 3, "context current with no context");
    assert.match(none.message, /no context/);
    ok(await run(["context", "set", "prod", "--endpoint", "qim.internal:7443", "--tenant", tenant, "--ca", e2e.pki.ca.certPath, "--cert", e2e.pki.admin.certPath, "--key", e2e.pki.admin.keyPath], { env }), "context set prod");
    ok(await run(["context", "set", "staging", "--endpoint", "staging:7443", "--insecure"], { env }), "context set staging");
    const cur = ok(await run(["context", "current"], { env }), "context current");
    assert.deepEqual(cur, {
      name: "prod", file: path.join(xdg, "qimctl", "config.json"), selectedBy: "the current context",
      endpoint: "qim.internal:7443", tenant, insecure: false, ca: path.resolve(e2e.pki.ca.certPath), cert: path.resolve(e2e.pki.admin.certPath), key: path.resolve(e2e.pki.admin.keyPath),
    });
    const table = await run(["context", "current"], { env, json: false });
    assert.equal(table.code, 0, table.stderr);
    assert.equal(table.stdout.split("\n")[0], "prod");
    assert.match(table.stdout, /endpoint: +qim\.internal:7443\n/);
    assert.ok(table.stdout.includes(`certificate:  ${path.resolve(e2e.pki.admin.certPath)}\n`), table.stdout);
    const byEnv = ok(await run(["context", "current"], { env: { ...env, QIMCTL_CONTEXT: "staging" } }), "context current (QIMCTL_CONTEXT)");
    assert.equal(byEnv.name, "staging");
    assert.equal(byEnv.selectedBy, "QIMCTL_CONTEXT");
    assert.equal(byEnv.insecure, true);
    assert.equal(byEnv.cert, null);
  });
});
