/**
 * Issue 6, certificates: every certificate the admin server must refuse, table-driven, against the
 * real server process over mTLS with the real `qimctl`: expired, not yet valid, another CA, the CA's
 * own certificate used as a client, no role (no OU), an unknown role, and a revoked one (the
 * --deny-list file, changed under the running server: no restart). Each refusal: exit 6, a clear
 * message, an audit entry carrying the certificate's fingerprint, nothing changed.
 */
import assert from "node:assert/strict";
import { randomUUID, X509Certificate } from "node:crypto";
import { appendFileSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { CLIENT_NAMES, writeTestPki, type TestPkiFiles, type TestPkiName } from "../certs/fixture.js";
import { spawn } from "node:child_process";
import type { AuditRecord } from "../../server/audit.js";
import { baseEnv, failed, ok, QIMCTL, ROOT, run, type Run } from "../e2e/qimctl.js";
import { freePort, startRedis, type RedisServer } from "../harness/redis.js";
import { ADMIN_SERVER, startServerProcess, type ServerProcess } from "./server-process.js";

/** An audit-log line as the server writes it. */
type AuditLine = AuditRecord;

/** How many times a check that waits for the server (a reload, an asynchronous audit entry) is tried. */
const ATTEMPTS = 60;
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** As the operator guide recommends: a temporary file beside it, renamed over it (never read half-written). */
const replaceFile = (file: string, text: string) => {
  writeFileSync(`${file}.tmp`, text);
  renameSync(`${file}.tmp`, file);
};

describe("refused client certificates, and revocation through the deny list without a restart", { timeout: 300_000 }, () => {
  let dir: string;
  let pki: TestPkiFiles;
  let redis: RedisServer;
  let server: ServerProcess;
  let auditLog: string;
  let denyList: string;
  const tenant = randomUUID();
  const owner = randomUUID();
  let group = "";

  const contextFor = (who: TestPkiName): string => {
    const file = path.join(dir, `context-${who}.json`);
    writeFileSync(file, JSON.stringify({ endpoint: server.endpoint, ca: pki.ca.certPath, cert: pki[who].certPath, key: pki[who].keyPath, tenant }));
    return file;
  };
  const fingerprintOf = (who: TestPkiName) => new X509Certificate(readFileSync(pki[who].certPath)).fingerprint256;
  const audit = (): AuditLine[] => readFileSync(auditLog, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as AuditLine);
  /** Waits (bounded) for audit entries after `from` that satisfy `pred` (TLS refusals are audited after the socket closed). */
  const auditedAfter = async (from: number, pred: (e: AuditLine) => boolean, count = 1): Promise<AuditLine[]> => {
    for (let i = 0; i < ATTEMPTS; i++) {
      const found = audit().slice(from).filter(pred);
      if (found.length >= count) return found;
      await pause(100);
    }
    assert.fail(`no ${count} audit entr(ies) as expected after line ${from}; the tail:\n${audit().slice(from).map((e) => JSON.stringify(e)).join("\n")}`);
  };
  /** The state "nothing changed" is compared on, read by the admin. */
  const snapshot = async () => {
    const g = ok(await run(["group", "show", "--group", group], { context: contextFor("operator") }), "group show");
    const l = ok(await run(["membership", "list", "--group", group], { context: contextFor("operator") }), "membership list");
    return { g, l };
  };

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qim-certs-"));
    pki = await writeTestPki(path.join(dir, "pki"));
    redis = await startRedis();
    auditLog = path.join(dir, "audit.log");
    denyList = path.join(dir, "deny-list");
    writeFileSync(denyList, "# revoked client certificates (qimctl certs fingerprint --cert FILE >> this file)\n");
    server = await startServerProcess({ redisAddr: redis.addr, pki, auditLog, denyList });
    await server.waitForLog(/deny list .*: 0 revoked certificate fingerprint\(s\) loaded \(start-up\)/);
    group = ok(await run(["group", "create", "--owner", owner], { context: contextFor("operator") }), "group create").group;
  });

  after(async () => {
    await server?.stop();
    await redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Refused at the TLS handshake (audited as tls-handshake) or per call by the server (PERMISSION_DENIED). */
  const CASES: { who: TestPkiName; name?: string; at: "handshake" | "call"; detail: RegExp; message: RegExp }[] = [
    { who: "expired", at: "handshake", detail: /^CERT_HAS_EXPIRED$/, message: /^the server refused this client certificate/ },
    { who: "notYetValid", at: "handshake", detail: /^CERT_NOT_YET_VALID$/, message: /^the server refused this client certificate/ },
    { who: "otherCaAdmin", at: "handshake", detail: /^UNABLE_TO_VERIFY_LEAF_SIGNATURE$/, message: /^the server refused this client certificate/ },
    { who: "caAsClient", at: "handshake", detail: /^INVALID_PURPOSE$/, message: /^the server refused this client certificate/ },
    { who: "noRole", name: CLIENT_NAMES.noRole, at: "call", detail: /names no known role \(OU\)/, message: /^permission denied: certificate of nobody names no known role \(OU\)$/ },
    { who: "unknownRole", name: CLIENT_NAMES.unknownRole, at: "call", detail: /names no known role \(OU\)/, message: /^permission denied: certificate of rooty names no known role \(OU\)$/ },
  ];

  for (const c of CASES) {
    it(`${c.who}: exit 6 with a clear message on a read and on a mutation, audited, nothing changed`, async () => {
      const before = await snapshot();
      const from = audit().length;
      const ctx = contextFor(c.who);
      const [read, mutation, text] = await Promise.all([
        run(["group", "show", "--group", group], { context: ctx }),
        run(["membership", "add", "--group", group, "--user", randomUUID()], { context: ctx }),
        run(["group", "show", "--group", group], { context: ctx, json: false }),
      ]);
      for (const [r, what] of [[read, "read"], [mutation, "mutation"]] as [Run, string][]) {
        const e = failed(r, 6, `${c.who} ${what}`);
        assert.match(e.message, c.message, `${c.who} ${what}: ${r.stderr}`);
        assert.equal(e.code, c.at === "handshake" ? "CERTIFICATE_REFUSED" : "PERMISSION_DENIED");
      }
      assert.equal(text.code, 6);
      assert.match(text.stderr, /^Error: /);
      assert.doesNotMatch(text.stderr, /\n\s+at /, "no stack trace");

      // a handshake refusal is audited with the reason and the client's address (Node has dropped
      // the certificate by the time it reports the refusal); a per-call one with the certificate
      const fp = fingerprintOf(c.who);
      const entries = c.at === "handshake"
        ? await auditedAfter(from, (e) => e.rpc === "tls-handshake" && c.detail.test(e.detail), 2)
        : await auditedAfter(from, (e) => e.fingerprint === fp, 2);
      for (const e of entries) {
        if (c.at === "handshake") {
          assert.equal(e.result, "UNAUTHENTICATED");
          assert.deepEqual(e.arguments, { remote: "127.0.0.1" });
        } else {
          assert.match(e.rpc, /^\/qim\.admin\.v1\.GroupService\/(GetGroup|AddMembers)$/);
          assert.equal(e.result, "PERMISSION_DENIED");
          assert.equal(e.principal, c.name);
        }
        assert.match(e.detail, c.detail);
      }
      assert.deepEqual(await snapshot(), before, "nothing changed");
    });
  }

  it("revoked: works, then refused at every RPC once its fingerprint is in the deny list (no restart), audited; a malformed file keeps the list; removed (SIGHUP) it works again", async () => {
    const admin = contextFor("admin");
    const fp = fingerprintOf("admin");
    const pid = server.pid;
    ok(await run(["group", "show", "--group", group], { context: admin }), "admin before revocation");

    // the deny-list line as the CLI prints it, appended as an operator would (>> deny-list)
    const printed = await run(["certs", "fingerprint", "--cert", pki.admin.certPath], { json: false });
    assert.equal(printed.code, 0, printed.stderr);
    assert.match(printed.stdout, new RegExp(`^${fp}  # CN=alice, OU=admin, expires \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z\\n$`));
    const logFrom = server.log().length;
    appendFileSync(denyList, printed.stdout);

    let refused: Run | undefined;
    for (let i = 0; i < ATTEMPTS && !refused; i++) {
      const r = await run(["group", "show", "--group", group], { context: admin });
      if (r.code === 6) refused = r;
      else assert.equal(r.code, 0, `before the reload the call still works: ${r.stderr}`);
    }
    assert.ok(refused, `still accepted after ${ATTEMPTS} attempts`);
    await server.waitForLog(/deny list .*: 1 revoked certificate fingerprint\(s\) loaded \(file changed\)/, 5000, logFrom);
    assert.equal(server.pid, pid, "no restart");
    const e = failed(refused, 6, "revoked");
    assert.equal(e.code, "PERMISSION_DENIED");
    assert.match(e.message, new RegExp(`^permission denied: certificate revoked \\(SHA-256 ${fp} of alice is on the server's deny list\\)$`));

    // every RPC, a mutation included; nothing changes
    const before = await snapshot();
    const from = audit().length;
    const calls = [
      ["membership", "add", "--group", group, "--user", randomUUID()],
      ["membership", "list", "--group", group],
      ["audit", "tail"],
      ["projection", "epoch"],
      ["dispatch", "audit"],
      ["history", "--group", group, "--as", owner],
    ];
    const results = await Promise.all(calls.map((args) => run(args, { context: admin })));
    results.forEach((r, i) => assert.match(failed(r, 6, calls[i]!.join(" ")).message, /certificate revoked/));
    assert.deepEqual(await snapshot(), before, "nothing changed");
    const entries = audit().slice(from).filter((x) => x.fingerprint === fp);
    assert.equal(entries.length, calls.length, "each refusal is audited before the answer");
    for (const x of entries) {
      assert.equal(x.result, "PERMISSION_DENIED");
      assert.equal(x.principal, "alice");
      assert.equal(x.role, "admin");
      assert.equal(x.detail, `certificate revoked: ${fp} is on the deny list`);
    }

    // a malformed file is not applied: the previous list stays in force
    const badFrom = server.log().length;
    replaceFile(denyList, `${fp}\nnot-a-fingerprint\n`);
    await server.waitForLog(/deny list .*: NOT reloaded \(file changed\): line 2: "not-a-fingerprint" is not a SHA-256 certificate fingerprint.*; the previous 1 fingerprint\(s\) stay in force/, 20_000, badFrom);
    failed(await run(["group", "show", "--group", group], { context: admin }), 6, "still revoked after a malformed file");

    // removed again, and SIGHUP: works again, still the same process
    const hupFrom = server.log().length;
    replaceFile(denyList, "# nobody revoked\n");
    server.signal("SIGHUP");
    await server.waitForLog(/deny list .*: 0 revoked certificate fingerprint\(s\) loaded \(SIGHUP\)/, 20_000, hupFrom);
    let works: Run | undefined;
    for (let i = 0; i < ATTEMPTS && !works; i++) {
      const r = await run(["group", "show", "--group", group], { context: admin });
      if (r.code === 0) works = r;
    }
    assert.ok(works, "works again once removed from the deny list");
    assert.equal(server.pid, pid);
    assert.equal((await Promise.race([server.exited.then(() => "exited"), pause(0).then(() => "running")])), "running");
  });

  it("qimctl server start takes the same --deny-list; an unreadable or malformed one refuses to start (exit 2), as qim-admin-server does", async () => {
    const fp = fingerprintOf("admin");
    const file = path.join(dir, "deny-list-2");
    writeFileSync(file, `# alice's laptop was stolen\n${fp.toLowerCase().replace(/:/g, "")}\n`);
    const port = await freePort();
    const tls = ["--tls-ca", pki.ca.certPath, "--tls-cert", pki.server.certPath, "--tls-key", pki.server.keyPath];
    const child = spawn(process.execPath, [
      QIMCTL, "server", "start", "--listen", `127.0.0.1:${port}`, "--metrics-listen", "off", "--redis", redis.addr, ...tls,
      "--audit-log", path.join(dir, "audit-2.log"), "--deny-list", file,
    ], { cwd: ROOT, env: baseEnv });
    let stderr = "";
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    try {
      await new Promise<void>((resolve, reject) => {
        child.stderr.on("data", (d: Buffer) => {
          stderr += d.toString();
          if (stderr.includes("listening on")) resolve();
        });
        child.once("exit", (code) => reject(new Error(`server start exited ${code}: ${stderr}`)));
      });
      assert.match(stderr, /deny list .*: 1 revoked certificate fingerprint\(s\) loaded \(start-up\)/);
      const endpoint = `localhost:${port}`;
      const revoked = failed(await run(["group", "show", "--group", group, "--endpoint", endpoint], { context: contextFor("admin") }), 6, "revoked at start-up");
      assert.match(revoked.message, /certificate revoked/);
      ok(await run(["group", "show", "--group", group, "--endpoint", endpoint], { context: contextFor("viewer") }), "another certificate works");
    } finally {
      child.kill("SIGTERM");
    }
    assert.equal(await exited, 0, stderr);

    const bad = path.join(dir, "deny-list-bad");
    writeFileSync(bad, `${fp}\n${fp.slice(3)}\n`);
    for (const [f, why] of [[path.join(dir, "no-such-file"), /no-such-file.*ENOENT/], [bad, /line 2: .* is not a SHA-256 certificate fingerprint/]] as const) {
      const r = failed(await run(["server", "start", "--listen", `127.0.0.1:${port}`, "--redis", redis.addr, ...tls, "--deny-list", f]), 2, `server start --deny-list ${f}`);
      assert.equal(r.field, "--deny-list");
      assert.match(r.message, why);
      const daemon = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const c = spawn(process.execPath, [ADMIN_SERVER, "--listen", `127.0.0.1:${port}`, "--metrics-listen", "off", "--redis", redis.addr, ...tls, "--audit-log", path.join(dir, "audit-3.log"), "--deny-list", f], { cwd: ROOT, env: baseEnv });
        let err = "";
        c.stderr.on("data", (d: Buffer) => { err += d.toString(); });
        c.once("exit", (code) => resolve({ code, stderr: err }));
      });
      assert.equal(daemon.code, 2, daemon.stderr);
      assert.match(daemon.stderr, why);
      assert.doesNotMatch(daemon.stderr, /listening on/);
    }
  });
});
