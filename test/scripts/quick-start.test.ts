/**
 * The README's two commands as a newcomer meets them: `npm run demo` (scripts/demo.mjs) and
 * `npm test` (scripts/test.mjs), with what they need from the machine checked by one module
 * (scripts/prerequisites.mjs). On a machine that lacks a prerequisite and may not install it,
 * both print the exact apt-get command and exit 2 before doing anything; with everything there,
 * the demo script runs the real demo (its own redis-server, the admin server over mTLS) to exit 0.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { killMentioning, qimctl } from "../dev/helpers.js";
import { baseEnv, ROOT } from "../e2e/qimctl.js";

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

function node(args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(process.execPath, args, { cwd: opts.cwd ?? ROOT, env: { ...baseEnv, ...opts.env }, timeout: 240_000 }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, stdout, stderr });
    });
  });
}

const script = (name: string) => path.join(ROOT, "scripts", name);

describe("the Quick start scripts", { timeout: 300_000 }, () => {
  let tmp: string;
  /** A PATH with only `node` on it: nothing of redis, tmux, Maven; apt-get not allowed. */
  let bare: NodeJS.ProcessEnv;

  before(() => {
    tmp = mkdtempSync(path.join(os.tmpdir(), "qimctl-quick-start-"));
    const bin = path.join(tmp, "bin");
    mkdirSync(bin);
    symlinkSync(process.execPath, path.join(bin, "node"));
    bare = { PATH: bin, QIM_NO_APT: "1", QIM_JAVA: "" };
  });

  after(async () => {
    await qimctl(["dev", "down", "--data-dir", path.join(tmp, ".qim", "demo")], { env: { XDG_CONFIG_HOME: path.join(tmp, "xdg") }, cwd: tmp });
    const left = killMentioning(tmp);
    rmSync(tmp, { recursive: true, force: true });
    assert.deepEqual(left, [], "processes left behind");
  });

  it("prerequisites test: one line per prerequisite found on this machine, Java 17 among them", async () => {
    const r = await node([script("prerequisites.mjs"), "test"]);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trimEnd().split("\n");
    assert.deepEqual(lines.map((l) => l.split(":")[0]), ["redis-server", "redis-cli", "tmux", "java 17", "maven", "python3-grpcio", "python3-grpc-tools", "python3-websockets", "grpcurl", "promtool"]);
    assert.match(lines[0]!, /^redis-server: \/\S+ Redis server v=\d/);
    assert.match(lines[2]!, /^tmux: \/\S+ tmux \d/);
    assert.match(lines[3]!, /^java 17: \/\S+ .*version "17\./);
    assert.match(lines[5]!, /^python3-grpcio: \/usr\/bin\/python3 grpcio \d/);
    assert.match(lines[6]!, /^python3-grpc-tools: \/usr\/bin\/python3 libprotoc \d/);
    assert.match(lines[7]!, /^python3-websockets: \/usr\/bin\/python3 websockets \d/);
    assert.match(lines[8]!, /^grpcurl: \/\S+\/grpcurl v\d+\.\d+\.\d+$/);
    assert.match(lines[9]!, /^promtool: \/\S+\/promtool promtool, version \d+\.\d+/);
  });

  it("missing prerequisites without permission to install: the exact command, exit 2; a wrong argument is a usage error", async () => {
    const r = await node([script("prerequisites.mjs"), "test"], { env: bare });
    assert.equal(r.code, 2, r.stderr);
    // Java 17, Debian's Python packages and grpcurl are found by absolute paths: missing only where they are not installed
    assert.match(r.stderr, /^missing: redis-server, redis-cli, tmux, (java 17, )?maven(, python3-grpcio)?(, python3-grpc-tools)?(, python3-websockets)?(, grpcurl)?, promtool\. Install with:$/m);
    assert.match(r.stderr, /^ {2}sudo apt-get update && sudo apt-get install -y redis-server redis-tools tmux (openjdk-17-jre-headless )?maven( python3-grpcio)?( python3-grpc-tools)?( python3-websockets)? && sudo apt-get install -y --no-install-recommends prometheus$/m);
    assert.equal(r.stdout, "");
    const usage = await node([script("prerequisites.mjs"), "deploy"]);
    assert.equal(usage.code, 2);
    assert.match(usage.stderr, /^usage: node scripts\/prerequisites\.mjs demo\|test$/m);
  });

  it("npm test's script stops before building when a prerequisite is missing: exit 2, the build untouched", async () => {
    const manifest = path.join(ROOT, "oclif.manifest.json");
    const before = statSync(manifest).mtimeMs;
    const r = await node([script("test.mjs"), "no-such-test"], { env: bare });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /^\[npm test\] missing: redis-server, .*Install with:$/m);
    assert.match(r.stderr, /^\[npm test\] {3}sudo apt-get update && sudo apt-get install -y redis-server redis-tools tmux /m);
    assert.doesNotMatch(r.stderr, /building/);
    assert.equal(statSync(manifest).mtimeMs, before, "nothing was built");
  });

  it("npm run demo's script without redis-server: the command to install it, exit 2, no stack started", async () => {
    const r = await node([script("demo.mjs"), "--output", "json"], { env: { ...bare, XDG_CONFIG_HOME: path.join(tmp, "xdg") }, cwd: tmp });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /^\[npm run demo\] missing: redis-server\. Install with:$/m);
    assert.match(r.stderr, /^\[npm run demo\] {3}sudo apt-get update && sudo apt-get install -y redis-server$/m);
    assert.equal(r.stdout, "");
    assert.deepEqual(killMentioning(tmp), [], "no process started");
  });

  it("npm run demo's script on this machine: the demo through the real stack, only its JSON summary on stdout, exit 0", async () => {
    const r = await node([script("demo.mjs"), "--output", "json", "--down"], { env: { XDG_CONFIG_HOME: path.join(tmp, "xdg") }, cwd: tmp });
    assert.equal(r.code, 0, `${r.stdout}\n${r.stderr}`);
    const summary = JSON.parse(r.stdout);
    assert.equal(summary.ok, true);
    assert.equal(summary.failedStep, null);
    assert.equal(summary.steps.length, 20); // dev-up … dispatch-audit, cluster-nodes, cmd-sync, devices, message-types, reactions, call, room, bulk-add, dev-down (test/e2e/demo.test.ts names them)
    for (const s of summary.steps) assert.equal(s.status, "ok", s.name);
    assert.equal(summary.dataDir, path.join(tmp, ".qim", "demo"));
    assert.equal(summary.stackRunning, false);
  });
});
