/**
 * Issue 24: `qimctl server config` without arguments refused with the first missing setting and
 * showed nothing. It now prints every default, marks what is required and not set, and exits 2
 * naming all of them (a script that checks a configuration still fails on it); the same for
 * `qim-admin-server --print-config`. Real processes, an environment without QIM_* variables.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import path from "node:path";
import { describe, it } from "node:test";
import { baseEnv, ROOT, run } from "./qimctl.js";

/** What has no default: the three TLS files without --insecure-dev, and a Redis (docs/config-reference.md). */
const REQUIRED = ["tls.ca", "tls.cert", "tls.key", "redis.addrs"];

describe("server config without arguments shows the defaults (issue 24)", { timeout: 60_000 }, () => {
  it("--output json: the defaults on stdout, the missing settings in `missing` and on stderr, exit 2", async () => {
    const r = await run(["server", "config"]);
    assert.equal(r.code, 2, r.stderr);
    const out = JSON.parse(r.stdout) as { config: string | null; settings: Record<string, any>; sources: Record<string, string>; missing: { key: string; flag: string | null; env: string[]; message: string }[] };
    assert.equal(out.config, null);
    // defaults as docs/config-reference.md lists them
    assert.equal(out.settings.listen, "127.0.0.1:7443");
    assert.equal(out.settings.metrics_listen, "127.0.0.1:9464");
    assert.equal(out.settings.dispatch.partitions, 8);
    assert.equal(out.settings.dispatch.retention, "1d");
    assert.equal(out.settings.audit.max_size, "64MiB");
    assert.ok(Object.values(out.sources).every((s) => s === "default"), JSON.stringify(out.sources));
    assert.deepEqual(out.missing.map((m) => m.key), REQUIRED);
    assert.deepEqual(out.missing.map((m) => m.flag), ["--tls-ca", "--tls-cert", "--tls-key", "--redis"]);
    assert.deepEqual(out.missing[3]!.env, ["QIM_REDIS_ADDR", "QIM_MESSAGE_STORE_ADDRS"]);
    assert.match(out.missing[0]!.message, /^--tls-ca: mTLS needs --tls-ca, --tls-cert and --tls-key/);
    const err = (JSON.parse(r.stderr) as { error: { code: string; exitCode: number; message: string; field: string } }).error;
    assert.deepEqual([err.code, err.exitCode, err.field], ["INVALID_ARGUMENT", 2, "--tls-ca"]);
    for (const key of REQUIRED) assert.ok(err.message.includes(key), `${key} named: ${err.message}`);
  });

  it("table: the config file text with the required settings marked at the top, every default with its source; the error on stderr", async () => {
    const r = await run(["server", "config"], { json: false });
    assert.equal(r.code, 2, r.stderr);
    const lines = r.stdout.split("\n");
    const mark = lines.indexOf("# REQUIRED, NOT SET (start-up refuses without them):");
    assert.ok(mark > 0, r.stdout);
    assert.deepEqual(lines.slice(mark + 1, mark + 1 + REQUIRED.length).map((l) => /^#\s+([a-z_.]+):/.exec(l)?.[1]), REQUIRED);
    assert.ok(lines.includes("listen: 127.0.0.1:7443  # default"), r.stdout);
    assert.ok(lines.includes("  partitions: 8  # default"), r.stdout);
    assert.match(r.stderr, /^Error: required, not set: tls\.ca \(--tls-ca\), tls\.cert \(--tls-cert\), tls\.key \(--tls-key\), redis\.addrs \(--redis\); /);
  });

  it("only what is still missing: --insecure-dev needs no TLS files, so a Redis alone is named; with one, exit 0 and `missing` empty", async () => {
    const r = await run(["server", "config", "--insecure-dev"]);
    assert.equal(r.code, 2, r.stderr);
    assert.deepEqual((JSON.parse(r.stdout) as { missing: { key: string }[] }).missing.map((m) => m.key), ["redis.addrs"]);
    const full = await run(["server", "config", "--insecure-dev", "--redis", "127.0.0.1:6379"]);
    assert.equal(full.code, 0, full.stderr);
    assert.deepEqual((JSON.parse(full.stdout) as { missing: unknown[] }).missing, []);
  });

  it("a setting that is wrong (not missing) is still refused alone, nothing printed", async () => {
    const r = await run(["server", "config", "--listen", "nope"]);
    assert.equal(r.code, 2);
    assert.equal(r.stdout, "");
    assert.equal((JSON.parse(r.stderr) as { error: { field: string } }).error.field, "--listen");
  });

  it("qim-admin-server --print-config: the same text on stdout, exit 2 naming the missing settings", async () => {
    const r = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const c = execFile(process.execPath, [path.join(ROOT, "bin", "qim-admin-server.js"), "--print-config"], { cwd: ROOT, env: baseEnv }, (_e, stdout, stderr) => resolve({ code: c.exitCode, stdout, stderr }));
    });
    assert.equal(r.code, 2, r.stderr);
    assert.ok(r.stdout.includes("# REQUIRED, NOT SET") && r.stdout.includes("listen: 127.0.0.1:7443  # default"), r.stdout);
    assert.match(r.stderr, /qim-admin-server: required, not set: tls\.ca, tls\.cert, tls\.key, redis\.addrs /);
  });
});
