/**
 * Issue 24 defects 6 and 8, through the real `qimctl membership add --from-file` process:
 * `/dev/zero` and a generated file past FROM_FILE_MAX_BYTES are refused (exit 2, the limit named)
 * while streaming, with the child's peak memory bounded; a CSV header with two `user` columns is
 * refused naming both, and the group on a real server (real redis-server) is unchanged.
 * No wall-clock time is asserted: the run()'s own 30 s timeout is the only clock.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, mkdtempSync, openSync, closeSync, rmSync, writeFileSync, writeSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { FROM_FILE_MAX_BYTES } from "../../cli/membership/user-file.js";
import { baseEnv, failed, ok, QIMCTL, ROOT, run, startE2eServer, type E2eServer } from "./qimctl.js";

const TIME = "/usr/bin/time";
/** Far above what the limits let the CLI hold (64 MB of input, node's own ~70 MB) and far below the 4.6 GB of the defect. */
const MAX_RSS_KB = 512 * 1024;

/** `qimctl args` under GNU time -v: its exit code, stderr, and the peak resident set (kB). */
function runMeasured(args: string[]): Promise<{ code: number; stderr: string; maxRssKb: number }> {
  return new Promise((resolve) => {
    execFile(TIME, ["-v", process.execPath, QIMCTL, ...args], { cwd: ROOT, env: baseEnv, timeout: 60_000, maxBuffer: 1 << 20 }, (err, _stdout, stderr) => {
      const rss = /Maximum resident set size \(kbytes\): (\d+)/.exec(stderr);
      resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, stderr, maxRssKb: rss ? Number(rss[1]) : Number.NaN });
    });
  });
}

describe("membership add --from-file: size limits and an ambiguous CSV header (issue 24)", { timeout: 180_000 }, () => {
  let dir: string;

  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qimctl-from-file-"));
  });
  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("/dev/zero (no line break at all) is refused early: exit 2, FROM_FILE_MAX_LINE_BYTES named, memory bounded", { skip: !existsSync("/dev/zero") }, async () => {
    const args = ["membership", "add", "--group", randomUUID(), "--from-file", "/dev/zero", "--dry-run"];
    const r = await run(args);
    const e = failed(r, 2, "--from-file /dev/zero");
    assert.equal(e.field, "--from-file");
    assert.match(e.message, /\/dev\/zero: a line is longer than 65536 bytes \(FROM_FILE_MAX_LINE_BYTES\).*nothing was sent/);
    if (existsSync(TIME)) {
      const m = await runMeasured(args);
      assert.equal(m.code, 2, m.stderr);
      assert.ok(m.maxRssKb < MAX_RSS_KB, `max RSS ${m.maxRssKb} kB`);
    }
  });

  it("a generated file one byte past FROM_FILE_MAX_BYTES, in short lines, is refused: exit 2, the limit named, memory bounded", async () => {
    const file = path.join(dir, "oversize.txt");
    const line = Buffer.from(`${randomUUID()}\n`);
    const block = Buffer.concat(Array.from({ length: Math.ceil((1 << 20) / line.length) }, () => line));
    const fd = openSync(file, "w");
    for (let written = 0; written <= FROM_FILE_MAX_BYTES; written += block.length) writeSync(fd, block);
    closeSync(fd);
    const args = ["membership", "add", "--group", randomUUID(), "--from-file", file, "--dry-run"];
    const e = failed(await run(args), 2, "--from-file oversize");
    assert.equal(e.field, "--from-file");
    assert.match(e.message, new RegExp(`larger than ${FROM_FILE_MAX_BYTES} bytes \\(FROM_FILE_MAX_BYTES.*nothing was sent`));
    if (existsSync(TIME)) {
      const m = await runMeasured(args);
      assert.equal(m.code, 2, m.stderr);
      assert.ok(m.maxRssKb < MAX_RSS_KB, `max RSS ${m.maxRssKb} kB`);
    }
    rmSync(file);
  });

  describe("against a real server", () => {
    let e2e: E2eServer;
    let context: string;

    before(async () => {
      e2e = await startE2eServer(path.join(dir, "server"));
      context = path.join(dir, "context.json");
      writeFileSync(context, JSON.stringify({ endpoint: e2e.endpoint, ca: e2e.pki.ca.certPath, cert: e2e.pki.operator.certPath, key: e2e.pki.operator.keyPath, tenant: randomUUID() }));
    });
    after(async () => {
      await e2e?.stop();
    });

    it("a CSV with two user columns is refused naming both (exit 2); nothing was sent", async () => {
      const owner = randomUUID();
      const group = ok(await run(["group", "create", "--owner", owner], { context }), "group create").group as string;
      const before = ok(await run(["group", "show", "--group", group], { context }), "group show");
      const csv = path.join(dir, "two-user-columns.csv");
      writeFileSync(csv, ["User,name, user", ...Array.from({ length: 4 }, (_, i) => `${randomUUID()},n${i},${randomUUID()}`)].join("\n"));
      const e = failed(await run(["membership", "add", "--group", group, "--from-file", csv], { context }), 2, "two user columns");
      assert.equal(e.field, "--from-file");
      assert.match(e.message, /line 1: .*the CSV header is ambiguous: columns 1 \("User"\) and 3 \(" user"\)/);
      assert.match(e.message, /nothing was sent/);
      assert.deepEqual(ok(await run(["group", "show", "--group", group], { context }), "group show after"), before);
      const members = ok(await run(["membership", "list", "--group", group], { context }), "membership list");
      assert.deepEqual(members.members.map((m: { userId: string }) => m.userId), [owner]);
    });
  });
});
