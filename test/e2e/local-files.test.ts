/**
 * Issue 24 #10: a bad local file or directory — a key that is not the certificate's, a key that is
 * no key, a key path under a file, a config directory that is a file or not permitted, a dev data
 * dir that cannot be written — exits 2 through the real qimctl process with a sentence naming the
 * path, never Node's raw error with exit 1 and no stack trace. Nothing here needs a server: each
 * is refused before a connection (dev up: before Redis or the server starts).
 *
 * Tests run as root, which ignores file modes, so "permission denied" cannot come from chmod:
 * sysfs refuses root a new directory (EPERM), used when this machine's /sys does so.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { writeTestPki, type TestPkiFiles } from "../certs/fixture.js";
import { failed, run } from "./qimctl.js";

describe("qimctl refuses bad local files with exit 2 and a sentence naming them", { timeout: 120_000 }, () => {
  let dir: string;
  let pki: TestPkiFiles;
  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qimctl-files-"));
    pki = await writeTestPki(path.join(dir, "pki"));
    writeFileSync(path.join(dir, "a-file"), "not a directory\n");
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const show = (cert: string, key: string) =>
    run(["group", "show", "--group", randomUUID(), "--tenant", randomUUID(), "--endpoint", "127.0.0.1:1", "--ca", pki.ca.certPath, "--cert", cert, "--key", key]);
  const noStack = (r: { stderr: string }) => assert.doesNotMatch(r.stderr, /\n\s+at /, "no stack trace");

  it("a key that is not the certificate's (the server's key with the admin certificate)", async () => {
    const r = await show(pki.admin.certPath, pki.server.keyPath);
    const e = failed(r, 2, "mismatched key");
    assert.equal(e.field, "--key");
    assert.equal(e.message, `--key: ${pki.server.keyPath} is not the key of the certificate ${pki.admin.certPath}: give the key the certificate was issued for`);
    noStack(r);
  });

  it("a key file that holds no key", async () => {
    const junk = path.join(dir, "junk.key");
    writeFileSync(junk, "not a key\n");
    const e = failed(await show(pki.admin.certPath, junk), 2, "junk key");
    assert.match(e.message, new RegExp(`^--key: ${junk} is not an unencrypted PEM private key: `));
  });

  it("a key path under a file, and a key path that is a directory", async () => {
    const under = path.join(dir, "a-file", "admin.key");
    const e = failed(await show(pki.admin.certPath, under), 2, "key under a file");
    assert.equal(e.message, `--key: cannot read ${under}: ${path.join(dir, "a-file")} is a file, not a directory`);
    const d = failed(await show(pki.admin.certPath, dir), 2, "key is a directory");
    assert.equal(d.message, `--key: cannot read ${dir}: it is a directory, not a file`);
  });

  it("a config directory that is a file: XDG_CONFIG_HOME itself, or its qimctl entry", async () => {
    const home = path.join(dir, "a-file");
    const r = await run(["context", "set", "x", "--endpoint", "127.0.0.1:7000"], { env: { XDG_CONFIG_HOME: home } });
    const e = failed(r, 2, "XDG_CONFIG_HOME is a file");
    assert.equal(e.code, "INVALID_ARGUMENT");
    assert.equal(e.message, `cannot create the directory ${path.join(home, "qimctl")}: ${home} is a file, not a directory`);
    noStack(r);
    const cfg = path.join(dir, "cfg");
    mkdirSync(cfg);
    writeFileSync(path.join(cfg, "qimctl"), "");
    const q = failed(await run(["context", "set", "x", "--endpoint", "127.0.0.1:7000"], { env: { XDG_CONFIG_HOME: cfg } }), 2, "qimctl is a file");
    assert.equal(q.message, `cannot create the directory ${path.join(cfg, "qimctl")}: ${path.join(cfg, "qimctl")} is a file, not a directory`);
  });

  it("a config directory root may not create (sysfs: EPERM), when this machine's /sys refuses it", async (t) => {
    let refused = false;
    try {
      mkdirSync("/sys/kernel/qimctl");
      rmSync("/sys/kernel/qimctl", { recursive: true });
    } catch (err) {
      refused = (err as NodeJS.ErrnoException).code === "EPERM";
    }
    if (!refused) return t.skip("mkdir under /sys/kernel is not EPERM here");
    const e = failed(await run(["context", "set", "x", "--endpoint", "127.0.0.1:7000"], { env: { XDG_CONFIG_HOME: "/sys/kernel" } }), 2, "EPERM");
    assert.equal(e.message, "cannot create the directory /sys/kernel/qimctl: operation not permitted");
  });

  it("dev up with a --data-dir under a file, or that is a file: exit 2 before anything starts", async () => {
    const file = path.join(dir, "a-file");
    const cases = [
      [path.join(file, "dev"), `${file} is a file, not a directory`],
      [file, `${file} is not a directory`],
    ];
    for (const [dataDir, why] of cases) {
      const r = await run(["dev", "up", "--data-dir", dataDir!]);
      const e = failed(r, 2, `dev up --data-dir ${dataDir}`);
      assert.equal(e.field, "--data-dir");
      assert.equal(e.message, `--data-dir: cannot write into ${dataDir}: ${why}`);
      noStack(r);
    }
    assert.equal(existsSync(path.join(dir, "a-file.lock")), false);
  });
});
