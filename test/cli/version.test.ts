/**
 * bin/qimctl.js answers `--version` without loading @oclif/core (start-up time, bench/startup.ts):
 * its line must be the one oclif itself would print for this package on this machine.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import path from "node:path";
import { describe, it } from "node:test";
import { Config } from "@oclif/core";
import { ROOT } from "./contract.js";

const QIMCTL = path.join(ROOT, "bin", "qimctl.js");

describe("qimctl --version", () => {
  it("prints oclif's user agent line, exit 0", async () => {
    const config = await Config.load(ROOT);
    assert.equal(execFileSync(process.execPath, [QIMCTL, "--version"], { encoding: "utf8" }), `${config.userAgent}\n`);
  });

  it("only as the first argument, as oclif: elsewhere --version is oclif's to answer", () => {
    const help = execFileSync(process.execPath, [QIMCTL, "group", "--version"], { encoding: "utf8" });
    assert.match(help, /^Create and inspect groups\n/);
  });
});
