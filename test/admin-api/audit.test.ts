import assert from "node:assert/strict";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { AuditLog, type AuditRecord } from "../../admin-api/audit.js";

const record = (i: number, detail = ""): AuditRecord => ({
  time: new Date(1_700_000_000_000 + i).toISOString(), principal: `p${i}`, role: "operator", rpc: "/x/Y", arguments: { i },
  result: "OK", detail, durationMs: 1, requestId: `r${i}`, fingerprint: "",
});

describe("audit log", () => {
  let dir: string;
  before(async () => { dir = await mkdtemp(join(tmpdir(), "qim-audit-")); });
  after(async () => { await rm(dir, { recursive: true, force: true }); });

  it("appends concurrent records as whole lines, each on disk when its promise resolves", async () => {
    const log = await AuditLog.open(join(dir, "a.log"));
    await Promise.all(Array.from({ length: 200 }, (_, i) => log.append(record(i))));
    const lines = (await readFile(join(dir, "a.log"), "utf8")).trimEnd().split("\n");
    assert.equal(lines.length, 200);
    assert.deepEqual(lines.map((l) => (JSON.parse(l) as AuditRecord).requestId).sort(), Array.from({ length: 200 }, (_, i) => `r${i}`).sort());
    assert.equal((await stat(join(dir, "a.log"))).mode & 0o777, 0o600);
    await log.close();
  });

  it("tail returns the newest records, oldest first, across 64 KiB chunks and multi-byte text", async () => {
    const log = await AuditLog.open(join(dir, "b.log"));
    const wide = "é✓🙂".repeat(3000); // ~30 KB a line: lines and characters straddle chunk edges
    for (let i = 0; i < 30; i++) await log.append(record(i, wide));
    const tail = await log.tail(7);
    assert.deepEqual(tail.map((r) => r.requestId), ["r23", "r24", "r25", "r26", "r27", "r28", "r29"]);
    assert.ok(tail.every((r) => r.detail === wide));
    assert.equal((await log.tail(1000)).length, 30);
    await log.close();
  });

  it("reopening appends after what is there; nothing truncates", async () => {
    const path = join(dir, "c.log");
    const a = await AuditLog.open(path);
    await a.append(record(1));
    await a.close();
    const b = await AuditLog.open(path);
    await b.append(record(2));
    assert.deepEqual((await b.tail(10)).map((r) => r.requestId), ["r1", "r2"]);
    await b.close();
  });
});
