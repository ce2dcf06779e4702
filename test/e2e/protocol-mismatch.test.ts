/**
 * Issue 24: `--insecure` against a TLS server (and a TLS client against a plaintext
 * --insecure-dev server) gave "cannot reach the server" or "did not answer". Through the real
 * CLI against a real mTLS server process and a real --insecure-dev server on a real redis-server:
 * the error says which protocol the server speaks and what to change, exit 2 with --insecure
 * named; a port where nothing listens stays exit 5.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { freePort } from "../harness/redis.js";
import { ADMIN_SERVER, startServerProcess, type ServerProcess } from "../reliability/server-process.js";
import { failed, run, startE2eServer, type E2eServer } from "./qimctl.js";

describe("--insecure that does not match the server (issue 24)", { timeout: 120_000 }, () => {
  let dir: string;
  let e2e: E2eServer;
  let plain: ServerProcess;
  const tenant = randomUUID();
  const group = randomUUID();

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qimctl-protocol-"));
    e2e = await startE2eServer(dir);
    plain = await startServerProcess({
      redisAddr: e2e.redis.addr, pki: e2e.pki, auditLog: path.join(dir, "plain-audit.log"),
      childArgs: (port) => [ADMIN_SERVER, "--insecure-dev", "--listen", `127.0.0.1:${port}`, "--metrics-listen", "off", "--redis", e2e.redis.addr, "--audit-log", path.join(dir, "plain-audit.log")],
    });
  });
  after(async () => {
    await plain?.stop();
    await e2e?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("--insecure against the mTLS server: 'speaks TLS; drop --insecure', exit 2, SERVER_SPEAKS_TLS", async () => {
    const e = failed(await run(["group", "show", "-g", group, "--tenant", tenant, "--endpoint", e2e.endpoint, "--insecure"]), 2, "--insecure against TLS");
    assert.equal(e.code, "SERVER_SPEAKS_TLS");
    assert.equal(e.field, "--insecure");
    assert.equal(e.message, `the server at ${e2e.endpoint} speaks TLS; drop --insecure and connect with --ca, --cert and --key`);
  });

  it("insecure from a context file: the message says where it was set", async () => {
    const ctx = path.join(dir, "insecure.json");
    writeFileSync(ctx, JSON.stringify({ endpoint: e2e.endpoint, tenant, insecure: true }));
    const e = failed(await run(["group", "show", "-g", group], { context: ctx }), 2, "insecure context against TLS");
    assert.equal(e.code, "SERVER_SPEAKS_TLS");
    assert.ok(e.message.includes(`drop --insecure (set by `) && e.message.includes(ctx), e.message);
  });

  it("TLS with a client certificate against the --insecure-dev server: 'speaks plaintext; add --insecure', exit 2", async () => {
    const endpoint = `localhost:${plain.port}`;
    const pki = e2e.pki;
    const e = failed(await run(["group", "show", "-g", group, "--tenant", tenant, "--endpoint", endpoint, "--ca", pki.ca.certPath, "--cert", pki.admin.certPath, "--key", pki.admin.keyPath]), 2, "TLS against plaintext");
    assert.equal(e.code, "SERVER_SPEAKS_PLAINTEXT");
    assert.equal(e.field, "--insecure");
    assert.match(e.message, new RegExp(`^the server at ${endpoint} speaks plaintext .*add --insecure`));
  });

  it("the same flags against the matching server work; nothing listening stays exit 5", async () => {
    const shown = await run(["group", "show", "-g", group, "--tenant", tenant, "--endpoint", `localhost:${plain.port}`, "--insecure"]);
    assert.equal(shown.code, 3, `the plaintext server answers (the group does not exist): ${shown.stderr}`);
    const none = failed(await run(["group", "show", "-g", group, "--tenant", tenant, "--endpoint", `localhost:${await freePort()}`, "--insecure"]), 5, "nothing listens");
    assert.match(none.message, /^cannot reach the server/);
  });
});
