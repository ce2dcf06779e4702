/**
 * The server's log lines carry their time (issue 24): every record qim-admin-server writes to
 * stderr starts with an ISO-8601 UTC timestamp with milliseconds (server/log.ts), from start-up
 * to shutdown, and a refused start-up's one line as well.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { stampedLine } from "../../server/log.js";
import { writeTestPki, type TestPkiFiles } from "../certs/fixture.js";
import { baseEnv, ROOT } from "../e2e/qimctl.js";
import { startRedis, type RedisServer } from "../harness/redis.js";
import { ADMIN_SERVER, startServerProcess } from "../reliability/server-process.js";

/** The documented prefix, written out by hand: YYYY-MM-DDTHH:MM:SS.mmmZ and one space. */
const STAMP = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.(\d{3})Z (\S.*)$/;

/** Every record of a log: its lines, without the continuation lines of a multi-line record (indented, as a stack trace's). */
function records(log: string): string[] {
  return log.split("\n").filter((l) => l !== "" && !/^\s/.test(l));
}

describe("server log lines carry a UTC timestamp", { timeout: 120_000 }, () => {
  let dir: string;
  let pki: TestPkiFiles;
  let redis: RedisServer;
  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qim-log-lines-"));
    pki = await writeTestPki(path.join(dir, "pki"));
    redis = await startRedis();
  });
  after(async () => {
    await redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("stampedLine writes the time as toISOString's fields, then the line", () => {
    // 2026-12-02 08:41:07.352 UTC, from its parts: no clock involved
    const at = new Date(Date.UTC(2026, 11, 2, 8, 41, 7, 352));
    assert.equal(stampedLine("qim admin server listening on 127.0.0.1:1", at), "2026-12-02T08:41:07.352Z qim admin server listening on 127.0.0.1:1");
  });

  it("a real server: every record from start-up to SIGTERM starts with the stamp", async () => {
    const server = await startServerProcess({ redisAddr: redis.addr, pki, auditLog: path.join(dir, "audit.log") });
    await server.stop();
    const lines = records(server.log());
    assert.ok(lines.some((l) => /qim admin server listening on /.test(l)), server.log());
    assert.ok(lines.some((l) => / SIGTERM: shutting down$/.test(l)), server.log());
    for (const line of lines) {
      const m = STAMP.exec(line);
      assert.ok(m, `no timestamp: ${line}`);
      const [y, mo, d, h, mi, s, ms] = m.slice(1, 8).map(Number) as [number, number, number, number, number, number, number];
      // a real calendar time: the fields read back as the same instant
      assert.equal(new Date(Date.UTC(y, mo - 1, d, h, mi, s, ms)).toISOString(), line.slice(0, 24));
    }
  });

  it("a refused start-up's line is stamped too", async () => {
    const r = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const c = execFile(process.execPath, [ADMIN_SERVER, "--listen", "127.0.0.1:0", "--redis", redis.addr], { cwd: ROOT, env: baseEnv }, (_err, _out, stderr) => resolve({ code: c.exitCode, stderr }));
    });
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z qim-admin-server: --tls-ca: mTLS needs/);
  });
});
