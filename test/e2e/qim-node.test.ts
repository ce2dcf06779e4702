/**
 * Issue 25: the server program is named for what it is, `qim-node` (a node of the engine), and
 * `qim-admin-server` keeps working as the same code path. Real processes, an environment without
 * QIM_* variables.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { SERVER_NODE_FLAGS } from "../../server/node-flags.js";
import { baseEnv, ROOT } from "./qimctl.js";

const BINS = { "qim-node": path.join(ROOT, "bin", "qim-node.js"), "qim-admin-server": path.join(ROOT, "bin", "qim-admin-server.js") } as const;

function runBin(bin: string, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const c = execFile(process.execPath, [bin, ...args], { cwd: ROOT, env: baseEnv }, (_e, stdout, stderr) => resolve({ code: c.exitCode, stdout, stderr }));
  });
}

describe("qim-node and qim-admin-server are one program (issue 25)", { timeout: 60_000 }, () => {
  it("package.json installs both, and both give node SERVER_NODE_FLAGS on their first line", () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, "package.json"), "utf8")) as { bin: Record<string, string> };
    assert.equal(pkg.bin["qim-node"], "bin/qim-node.js");
    assert.equal(pkg.bin["qim-admin-server"], "bin/qim-admin-server.js");
    for (const bin of Object.values(BINS)) assert.equal(readFileSync(bin, "utf8").split("\n")[0], `#!/usr/bin/env -S node ${SERVER_NODE_FLAGS.join(" ")}`);
  });

  it("--help names the program as invoked and both names; --print-config is the same under either name", async () => {
    for (const [name, bin] of Object.entries(BINS)) {
      const help = await runBin(bin, ["--help"]);
      assert.equal(help.code, 0, help.stderr);
      assert.match(help.stdout, new RegExp(`^Usage: ${name} \\[options\\]`));
      assert.match(help.stdout.replace(/\s+/g, " "), /The same program runs as qim-node and as qim-admin-server\./);
    }
    const args = ["--print-config", "--insecure-dev", "--redis", "127.0.0.1:6379"];
    const [a, b] = await Promise.all([runBin(BINS["qim-node"], args), runBin(BINS["qim-admin-server"], args)]);
    assert.equal(a.code, 0, a.stderr);
    assert.equal(a.stdout, b.stdout);
    assert.match(a.stdout, /^listen: 127\.0\.0\.1:7443 {2}# default$/m);
  });

  it("a refused start names the program as invoked (exit 2)", async () => {
    const r = await runBin(BINS["qim-node"], ["--redis", "127.0.0.1:6379"]);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /Z qim-node: --tls-ca: mTLS needs/);
  });
});
