/**
 * Issue 24 defect 7: the server's config file (server/settings) was parsed in time quadratic in
 * its keys (the YAML library's duplicate-key check compares each key with all before it) and had
 * no size cap. Through the real `qimctl server config` process: a file past CONFIG_FILE_MAX_BYTES
 * is refused naming the limit (exit 2), a file of many unknown keys is refused (exit 2), a
 * duplicate key is still refused with its line. In-process: reading 40,000 keys costs about 4
 * times 10,000 keys' (a generous bound of 8; quadratic was 16), measured in one run.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import { after, before, describe, it } from "node:test";
import { CONFIG_FILE_MAX_BYTES, readConfigFile } from "../../server/settings/resolve.js";
import { failed, run } from "./qimctl.js";

const keys = (n: number) => Array.from({ length: n }, (_, i) => `unknown_${i}: ${i}\n`).join("");

describe("the server's config file: linear parsing and a size cap (issue 24, defect 7)", { timeout: 120_000 }, () => {
  let dir: string;
  const file = (name: string, text: string) => {
    const p = path.join(dir, name);
    writeFileSync(p, text);
    return p;
  };

  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qimctl-config-"));
  });
  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("a file one byte past CONFIG_FILE_MAX_BYTES is refused: exit 2, the limit named", async () => {
    const big = file("big.yaml", `# ${"x".repeat(CONFIG_FILE_MAX_BYTES - 3)}\n\n`);
    const e = failed(await run(["server", "config", "--config", big]), 2, "oversize config");
    assert.match(e.message, new RegExp(`larger than ${CONFIG_FILE_MAX_BYTES} bytes \\(CONFIG_FILE_MAX_BYTES\\)`));
  });

  it("a file at the limit is read (comments only: no settings, the defaults)", async () => {
    const atLimit = file("at-limit.yaml", `# ${"x".repeat(CONFIG_FILE_MAX_BYTES - 3)}\n`);
    assert.equal(readConfigFile(atLimit).size, 0);
  });

  it("40,000 unknown keys: refused with the first one named (exit 2)", async () => {
    const many = file("many.yaml", keys(40_000));
    const e = failed(await run(["server", "config", "--config", many]), 2, "many unknown keys");
    assert.match(e.message, /unknown key unknown_0/);
  });

  it("a key given twice is still refused, with its line", async () => {
    const dup = file("dup.yaml", "listen: 127.0.0.1:7443\nredis:\n  addrs: [127.0.0.1:6379]\nlisten: 127.0.0.1:7444\n");
    const e = failed(await run(["server", "config", "--config", dup]), 2, "duplicate key");
    assert.match(e.message, /line 4: not valid YAML: Map keys must be unique \(listen\)/);
  });

  it("reading 4 times the keys costs less than 8 times as much (linear, not quadratic)", () => {
    const small = file("10k.yaml", keys(10_000));
    const large = file("40k.yaml", keys(40_000));
    const cost = (p: string) => {
      let best = Infinity;
      for (let i = 0; i < 3; i++) {
        const t = performance.now();
        assert.throws(() => readConfigFile(p), /unknown key unknown_0/);
        best = Math.min(best, performance.now() - t);
      }
      return best;
    };
    cost(small); // warm-up: the YAML library's code compiled
    const ratio = cost(large) / cost(small);
    assert.ok(ratio < 8, `40k keys cost ${ratio.toFixed(1)}× 10k keys'`);
  });
});
