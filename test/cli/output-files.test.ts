/**
 * cli/output-files.ts: where reports go by default and what is checked before a command writes a
 * file — checked without creating anything, so a command refused later leaves nothing behind.
 */
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { UsageError } from "../../cli/exit-codes.js";
import { devDataDirOf, stateReportsDir, writableDir, writableFile, writeFileWhole } from "../../cli/output-files.js";

describe("output files", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "qimctl-output-files-"));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const usage = (fn: () => unknown, field: string) => assert.throws(fn, (e: unknown) => e instanceof UsageError && e.field === field);

  it("reports default to $XDG_STATE_HOME/qimctl/reports, else ~/.local/state/qimctl/reports (a relative XDG_STATE_HOME is ignored)", () => {
    assert.equal(stateReportsDir({ XDG_STATE_HOME: "/var/state" }, "/home/a"), "/var/state/qimctl/reports");
    assert.equal(stateReportsDir({}, "/home/a"), "/home/a/.local/state/qimctl/reports");
    assert.equal(stateReportsDir({ XDG_STATE_HOME: "state" }, "/home/a"), "/home/a/.local/state/qimctl/reports");
  });

  it("a directory to write into may not exist yet (nothing is created when checking); a file in the way is refused", () => {
    const nested = path.join(dir, "a", "b", "c");
    assert.equal(writableDir("--report-dir", nested), nested);
    assert.equal(existsSync(path.join(dir, "a")), false, "checking creates nothing");
    const file = path.join(dir, "plain");
    writeFileSync(file, "x");
    usage(() => writableDir("--report-dir", file), "--report-dir");
    usage(() => writableDir("--report-dir", path.join(file, "below")), "--report-dir");
    usage(() => writableFile("--junit", dir), "--junit");
    usage(() => writableFile("--junit", path.join(dir, "missing", "j.xml")), "--junit");
    assert.equal(writableFile("--junit", path.join(dir, "j.xml")), path.join(dir, "j.xml"));
    writeFileWhole(path.join(nested, "r.json"), "{}\n", 0o700);
    assert.equal(existsSync(path.join(nested, "r.json")), true, "written, its directories created");
  });

  it("the dev stack's data dir only when the endpoint comes from a context file dev up marked", () => {
    const ctx = path.join(dir, "dev-context.json");
    writeFileSync(ctx, JSON.stringify({ endpoint: "localhost:1", dev: true, dataDir: "/work/.qim/dev" }));
    const fromContext = { endpoint: { value: "localhost:1", source: "context" as const, origin: ctx }, insecure: { value: false, source: "default" as const, origin: "" }, contextPath: ctx };
    assert.equal(devDataDirOf(fromContext), "/work/.qim/dev");
    assert.equal(devDataDirOf({ ...fromContext, endpoint: { value: "localhost:1", source: "flag", origin: "--endpoint" } }), null, "an endpoint given otherwise may be any server");
    writeFileSync(ctx, JSON.stringify({ endpoint: "localhost:1" }));
    assert.equal(devDataDirOf(fromContext), null, "a context dev up did not write");
  });

  it("the dev stack's data dir through a named context too, whatever its name: the config file's entry decides", () => {
    const config = path.join(dir, "config.json");
    writeFileSync(config, JSON.stringify({ current: "mine", contexts: {
      mine: { endpoint: "localhost:1", dev: true, dataDir: "/work/.qim/dev2" },
      prod: { endpoint: "qim.internal:7443" },
    } }));
    const named = (name: string) => ({ endpoint: { value: "localhost:1", source: "context" as const, origin: config }, insecure: { value: false, source: "default" as const, origin: "" }, contextPath: config, contextName: name });
    assert.equal(devDataDirOf(named("mine")), "/work/.qim/dev2");
    assert.equal(devDataDirOf(named("prod")), null, "a context dev up did not write");
    assert.equal(devDataDirOf(named("absent")), null);
  });
});
