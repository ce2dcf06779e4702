/**
 * The audit log when the OS cuts a write short (here: a file size limit; in production a full
 * disk): the record is reported failed, never written; the cut line does not glue itself to the
 * next record; TailAudit reads past it. Real files, a real child process under `ulimit -f`.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { after, describe, it } from "node:test";
import { AuditLog, type AuditRecord } from "../../server/audit.js";

const CHILD = path.join(path.dirname(fileURLToPath(import.meta.url)), "audit-short-write-child.js");
const record = (id: string): AuditRecord => ({
  time: new Date().toISOString(), principal: "oscar", role: "operator", rpc: "/qim.admin.v1.GroupService/AddMembers", arguments: { id },
  result: "OK", detail: "", durationMs: 1, requestId: id, fingerprint: "",
});

describe("audit log: a write cut short", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "qim-audit-short-"));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it("is reported failed, not written; the next record starts on its own line; tail reads past the cut line", async () => {
    const file = path.join(dir, "audit.log");
    const first = await AuditLog.open(file);
    await first.append(record("before"));
    await first.close();

    // 2 blocks of 1 KiB: the 3 KB record is cut at 2,048 bytes and the rest refused (EFBIG)
    const out = await new Promise<string>((resolve, reject) => execFile("bash", ["-c", 'ulimit -f 2 && exec "$0" "$@"', process.execPath, CHILD, file],
      { timeout: 30_000 }, (err, stdout, stderr) => (err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(stdout))));
    assert.equal(out.trim(), "refused EFBIG", "a record the OS did not take whole is not reported written");
    assert.equal(statSync(file).size, 2048);
    assert.notEqual(readFileSync(file).at(-1), 0x0a, "the cut line is there, unterminated");

    const again = await AuditLog.open(file);
    await again.append(record("after"));
    const lines = readFileSync(file, "utf8").split("\n").filter((l) => l !== "");
    assert.equal(lines.length, 3);
    assert.equal((JSON.parse(lines[2]!) as AuditRecord).requestId, "after", "the next record is a line of its own");
    const tail = await again.tail(10);
    assert.deepEqual(tail.map((r) => [r.requestId, r.result]), [["before", "OK"], ["", "MALFORMED"], ["after", "OK"]]);
    assert.match(tail[1]!.detail, /^not an audit record \(a write cut short\?\): "\{/);
    await again.close();
  });
});
