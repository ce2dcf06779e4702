/**
 * Named contexts through the real CLI against the real admin server over mTLS: the old single
 * context file keeps working and is imported by the first change; `context set|use|show|list|
 * delete`; `--context NAME` and `--context PATH`; refusals change nothing; `context show` never
 * prints key material; concurrent writers lose no context. XDG_CONFIG_HOME points into the temp dir.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash, randomUUID } from "node:crypto";
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { CLIENT_NAMES } from "../certs/fixture.js";
import { failed, ok, run, startE2eServer, type E2eServer } from "./qimctl.js";

/** SHA-256 of a PEM certificate's DER as "AA:BB:…", computed here from the PEM's base64 body. */
function fingerprintOf(pemFile: string): string {
  const body = readFileSync(pemFile, "utf8").replace(/-----(BEGIN|END) CERTIFICATE-----/g, "").replace(/\s+/g, "");
  return createHash("sha256").update(Buffer.from(body, "base64")).digest("hex").toUpperCase().match(/../g)!.join(":");
}

describe("qimctl context: named contexts against the real admin server", { timeout: 300_000 }, () => {
  let dir: string;
  let e2e: E2eServer;
  let env: NodeJS.ProcessEnv;
  let config: string;
  let legacy: string;
  const tenant = randomUUID();
  const owner = randomUUID();
  const member = randomUUID();
  let group = "";

  const q = (args: string[], json = true) => run(args, { env, json });

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qimctl-ctx-e2e-"));
    e2e = await startE2eServer(dir);
    env = { XDG_CONFIG_HOME: path.join(dir, "xdg") };
    config = path.join(dir, "xdg", "qimctl", "config.json");
    legacy = path.join(dir, "xdg", "qimctl", "context.json");
  });

  after(async () => {
    await e2e?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("the old single context file still works; the first context set imports it as the current context default", async () => {
    const none = ok(await q(["context", "list"]), "context list (nothing yet)");
    assert.deepEqual(none, { config, configExists: false, current: null, contexts: [], legacyFile: null, envOverride: null });
    failed(await q(["context", "show"]), 3, "context show with no context");

    // the old format, with paths relative to the file, as an existing user has it
    mkdirSync(path.join(dir, "xdg", "qimctl", "pki"), { recursive: true });
    for (const f of ["ca.crt", "operator.crt", "operator.key"]) {
      const from = f === "ca.crt" ? e2e.pki.ca.certPath : f === "operator.crt" ? e2e.pki.operator.certPath : e2e.pki.operator.keyPath;
      writeFileSync(path.join(dir, "xdg", "qimctl", "pki", f), readFileSync(from));
    }
    writeFileSync(legacy, JSON.stringify({ endpoint: e2e.endpoint, ca: "pki/ca.crt", cert: "pki/operator.crt", key: "pki/operator.key", tenant }));
    const created = ok(await q(["group", "create", "--owner", owner, "--member", member]), "group create through the old context file");
    group = created.group;
    assert.equal(created.tenant, tenant);
    const listed = ok(await q(["context", "list"]), "context list (old file only)");
    assert.equal(listed.legacyFile, legacy);
    assert.equal(listed.configExists, false);

    const set = ok(await q(["context", "set", "viewer", "--endpoint", e2e.endpoint, "--ca", e2e.pki.ca.certPath, "--cert", e2e.pki.viewer.certPath, "--key", e2e.pki.viewer.keyPath, "--tenant", tenant]), "context set viewer");
    assert.deepEqual(set.imported, { name: "default", from: legacy });
    assert.equal(set.created, true);
    assert.equal(set.context.current, false, "the imported context stays current");
    assert.equal(statSync(config).mode & 0o777, 0o600);
    const after = ok(await q(["context", "list"]), "context list");
    assert.equal(after.current, "default");
    assert.deepEqual(after.contexts.map((c: any) => [c.name, c.current, c.cert]), [
      ["default", true, path.join(dir, "xdg", "qimctl", "pki", "operator.crt")],
      ["viewer", false, e2e.pki.viewer.certPath],
    ]);
    assert.equal(after.legacyFile, null, "the old file is no longer read");
    // the current context (the imported one) still reaches the server as the operator
    ok(await q(["membership", "add", "--group", group, "--user", randomUUID()]), "membership add through the current context");
  });

  it("--context NAME picks a named context, --context PATH a file; context use switches; re-running use changes nothing", async () => {
    const asViewer = await q(["membership", "add", "--group", group, "--user", randomUUID(), "--context", "viewer"]);
    failed(asViewer, 6, "a viewer may not add members");
    assert.equal(ok(await q(["group", "show", "--group", group, "--context", "viewer"]), "group show as viewer").group, group);

    const file = path.join(dir, "admin-context.json");
    writeFileSync(file, JSON.stringify({ endpoint: e2e.endpoint, ca: e2e.pki.ca.certPath, cert: e2e.pki.admin.certPath, key: e2e.pki.admin.keyPath, tenant }));
    ok(await q(["group", "show", "--group", group, "--context", file]), "group show through --context PATH");
    ok(await run(["group", "show", "--group", group], { env: { ...env, QIMCTL_CONTEXT: "viewer" } }), "QIMCTL_CONTEXT=NAME");

    const unknown = failed(await q(["group", "show", "--group", group, "--context", "staging"]), 2, "unknown context name");
    assert.equal(unknown.field, "--context");
    assert.match(unknown.message, /no context named "staging" in .*config\.json; known: default, viewer/);

    const used = ok(await q(["context", "use", "viewer"]), "context use viewer");
    assert.deepEqual([used.current, used.previous, used.changed, used.imported], ["viewer", "default", true, null]);
    failed(await q(["membership", "add", "--group", group, "--user", randomUUID()]), 6, "the current context is now the viewer's");
    const again = ok(await q(["context", "use", "viewer"]), "context use viewer again");
    assert.equal(again.changed, false);
    const text = await q(["context", "use", "viewer"], false);
    assert.match(text.stdout, /already the current context; nothing changed/);
    const missing = failed(await q(["context", "use", "staging"]), 3, "context use of an unknown name");
    assert.match(missing.message, /known: default, viewer/);
  });

  it("context show: paths, subject, role, expiry and fingerprint read from the certificates; never the key's content", async () => {
    const shown = await q(["context", "show"]);
    const r = ok(shown, "context show");
    assert.equal(r.name, "viewer");
    assert.equal(r.current, true);
    assert.equal(r.selectedBy, "the current context");
    assert.equal(r.endpoint, e2e.endpoint);
    assert.equal(r.tenant, tenant);
    assert.deepEqual(r.cert.certificate.subject, { CN: CLIENT_NAMES.viewer, OU: "viewer" });
    assert.equal(r.cert.certificate.role, "viewer");
    assert.equal(r.cert.certificate.fingerprint256, fingerprintOf(e2e.pki.viewer.certPath));
    assert.equal(r.ca.certificate.fingerprint256, fingerprintOf(e2e.pki.ca.certPath));
    assert.equal(r.cert.certificate.validNow, true);
    assert.deepEqual(r.key, { path: e2e.pki.viewer.keyPath, exists: true, mode: "0600", problem: null });

    const expired = ok(await q(["context", "set", "old", "--endpoint", e2e.endpoint, "--cert", e2e.pki.expired.certPath, "--key", e2e.pki.expired.keyPath]), "context set old (expired certificate)");
    assert.equal(expired.context.current, false);
    const old = ok(await q(["context", "show", "old"]), "context show old");
    assert.equal(old.cert.certificate.validNow, false);
    assert.match(old.cert.problem, /^expired on /);

    // nothing of any key file in any output, JSON or text
    const table = await q(["context", "show"], false);
    assert.equal(table.code, 0, table.stderr);
    assert.match(table.stdout, new RegExp(`CN=${CLIENT_NAMES.viewer}, OU=viewer`));
    for (const key of [e2e.pki.viewer.keyPath, e2e.pki.expired.keyPath]) {
      const lines = readFileSync(key, "utf8").split("\n").filter((l) => l.length > 20 && !l.startsWith("-----"));
      for (const out of [shown.stdout, table.stdout, JSON.stringify(old)]) for (const l of lines) assert.ok(!out.includes(l), "a line of the key file was printed");
    }
    chmodSync(e2e.pki.expired.keyPath, 0o644);
    try {
      assert.match(ok(await q(["context", "show", "old"]), "show old").key.problem, /readable by others than its owner \(mode 0644\)/);
    } finally {
      chmodSync(e2e.pki.expired.keyPath, 0o600);
    }
    const file = ok(await q(["context", "show", path.join(dir, "admin-context.json")]), "context show PATH");
    assert.deepEqual([file.name, file.selectedBy, file.cert.certificate.role], [null, "argument", "admin"]);
    failed(await q(["context", "show", "staging"]), 3, "context show of an unknown name");
  });

  it("context set refuses bad input naming the flag and writes nothing; the same values again change nothing", async () => {
    const before = readFileSync(config, "utf8");
    const cases: [string[], string, RegExp][] = [
      [["context", "set", "x", "--endpoint", "no-port"], "--endpoint", /expected host:port/],
      [["context", "set", "x"], "--endpoint", /a context needs an endpoint/],
      [["context", "set", "x", "--endpoint", "h:1", "--tenant", "t"], "--tenant", /UUID/i],
      [["context", "set", "x", "--endpoint", "h:1", "--ca", path.join(dir, "nope.crt")], "--ca", /cannot read .*nope\.crt: ENOENT/],
      [["context", "set", "x", "--endpoint", "h:1", "--ca", e2e.pki.viewer.keyPath], "--ca", /not a PEM certificate/],
      [["context", "set", "x", "--endpoint", "h:1", "--cert", e2e.pki.viewer.certPath], "--key", /needs its key/],
      [["context", "set", "x", "--endpoint", "h:1", "--cert", e2e.pki.viewer.certPath, "--key", e2e.pki.server.keyPath], "--key", /is not the key of the certificate/],
      [["context", "set", "x/y", "--endpoint", "h:1"], "NAME", /is not a context name/],
    ];
    for (const [args, field, message] of cases) {
      const e = failed(await q(args), 2, args.join(" "));
      assert.equal(e.field, field, `${args.join(" ")}: ${e.message}`);
      assert.match(e.message, message);
    }
    assert.equal(readFileSync(config, "utf8"), before, "nothing written");

    const same = ok(await q(["context", "set", "viewer", "--tenant", tenant]), "context set with the same tenant");
    assert.deepEqual([same.created, same.changed], [false, false]);
    assert.equal(readFileSync(config, "utf8"), before);
    const cleared = ok(await q(["context", "set", "old", "--tenant", tenant, "--use"]), "context set --use");
    assert.deepEqual([cleared.changed, cleared.context.current, cleared.context.tenant], [true, true, tenant]);
    const removed = ok(await q(["context", "set", "old", "--tenant", ""]), "context set --tenant '' removes it");
    assert.equal(removed.context.tenant, null);
  });

  it("context delete: the current one clears current and says so; a second delete changes nothing", async () => {
    const del = ok(await q(["context", "delete", "old"]), "context delete old");
    assert.deepEqual([del.deleted, del.wasCurrent, del.current, del.remaining], [true, true, null, ["default", "viewer"]]);
    const text = await q(["context", "delete", "viewer"], false);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^Context "viewer" deleted from /);
    assert.doesNotMatch(text.stdout, /it was the current context/);
    const again = ok(await q(["context", "delete", "old"]), "context delete old again");
    assert.deepEqual([again.deleted, again.wasCurrent, again.remaining], [false, false, ["default"]]);
    // no context current, no flags: a command has no endpoint
    const noEndpoint = failed(await q(["group", "show", "--group", group, "--tenant", tenant]), 2, "no current context");
    assert.equal(noEndpoint.field, "--endpoint");
    ok(await q(["context", "use", "default"]), "context use default");
    ok(await q(["group", "show", "--group", group]), "group show through default again");
  });

  it("concurrent context set runs lose no context: each read-change-write holds the lock", async () => {
    const names = Array.from({ length: 6 }, (_, i) => `par${i}`);
    const runs = await Promise.all(names.map((n) => q(["context", "set", n, "--endpoint", `host-${n}:7443`])));
    runs.forEach((r, i) => ok(r, `context set ${names[i]}`));
    const listed = ok(await q(["context", "list"]), "context list");
    assert.deepEqual(listed.contexts.map((c: any) => c.name), ["default", ...names]);
    assert.deepEqual(listed.contexts.slice(1).map((c: any) => c.endpoint), names.map((n) => `host-${n}:7443`));
    assert.deepEqual(readdirSync(path.dirname(config)).filter((f) => f !== "pki").sort(), ["config.json", "context.json"], "no temporary or lock file left");
  });

  it("a lock left by a dead qimctl is taken over by exactly one of several concurrent writers at a time: no context lost", async () => {
    // a pid that is certainly gone: a child that has exited
    const dead = spawnSync(process.execPath, ["-e", "0"]).pid!;
    writeFileSync(`${config}.lock`, String(dead), { mode: 0o600 });
    const names = Array.from({ length: 6 }, (_, i) => `stale${i}`);
    const runs = await Promise.all(names.map((n) => q(["context", "set", n, "--endpoint", `host-${n}:7443`])));
    runs.forEach((r, i) => ok(r, `context set ${names[i]} over a stale lock`));
    const listed = ok(await q(["context", "list"]), "context list");
    for (const n of names) assert.ok(listed.contexts.some((c: any) => c.name === n && c.endpoint === `host-${n}:7443`), `context ${n} kept`);
    assert.deepEqual(readdirSync(path.dirname(config)).filter((f) => f !== "pki").sort(), ["config.json", "context.json"], "no lock, marker or temporary file left");
  });

  it("certs issue --write-context writes the context named after the certificate and makes it current; --context NAME names it", async () => {
    const certsDir = path.join(dir, "issued");
    const issue = (args: string[]) => q(["certs", "issue", "--role", "operator", "--dir", certsDir, "--ca-cert", e2e.pki.ca.certPath, "--ca-key", e2e.pki.ca.keyPath, "--write-context", "--endpoint", e2e.endpoint, "--tenant", tenant, ...args]);
    const carol = ok(await issue(["--name", "carol"]), "certs issue carol --write-context");
    assert.deepEqual([carol.contextName, carol.contextPath], ["carol", config]);
    const listed = ok(await q(["context", "list"]), "context list");
    assert.equal(listed.current, "carol");
    assert.deepEqual(listed.contexts.find((c: any) => c.name === "carol"), {
      name: "carol", current: true, endpoint: e2e.endpoint, tenant, gateway: null, insecure: false, ca: e2e.pki.ca.certPath, cert: carol.certPath, key: carol.keyPath, devDataDir: null,
    });
    ok(await q(["membership", "add", "--group", group, "--user", randomUUID()]), "membership add as carol through the current context");
    const dan = ok(await issue(["--name", "dan", "--context", "ops"]), "certs issue dan --context ops");
    assert.equal(dan.contextName, "ops");
    assert.equal(ok(await q(["context", "show"]), "context show").cert.certificate.subject.CN, "dan");
    // a bad context name is refused before any file is written
    const bad = failed(await issue(["--name", "erin", "--context", "no good"]), 2, "certs issue --context with a bad name");
    assert.equal(bad.field, "--context");
    assert.ok(!readdirSync(certsDir).some((f) => f.startsWith("erin")), "no certificate written");
  });
});
