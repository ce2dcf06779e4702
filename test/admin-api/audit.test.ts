import assert from "node:assert/strict";
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { createHash } from "node:crypto";
import { AUDIT_ARGUMENTS_MAX_BYTES, AUDIT_ARRAY_MAX, AUDIT_STRING_MAX, auditArguments, AuditLog, type AuditRecord } from "../../admin-api/audit.js";

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

  it("recent() answers the newest records from memory: seeded from the file at open, kept up by append", async () => {
    const path = join(dir, "recent.log");
    const a = await AuditLog.open(path);
    assert.deepEqual(a.recent(8), [], "a new log has none");
    for (let i = 0; i < 20; i++) await a.append(record(i));
    assert.deepEqual(a.recent(3).map((r) => r.requestId), ["r17", "r18", "r19"]);
    await a.close();
    const b = await AuditLog.open(path, { keepRecent: 5 });
    assert.deepEqual(b.recent(5), await b.tail(5));
    await Promise.all([b.append(record(20)), b.append(record(21))]);
    assert.deepEqual(b.recent(5).map((r) => r.requestId), ["r17", "r18", "r19", "r20", "r21"]);
    assert.deepEqual(b.recent(5), await b.tail(5));
    assert.deepEqual(b.recent(0), []);
    assert.throws(() => b.recent(6), /keeps the newest 5 records only/);
    await b.close();
  });

  it("records a request bounded: a legitimate one whole, long strings and arrays cut with a marker, the rest as size and SHA-256", () => {
    const users = Array.from({ length: AUDIT_ARRAY_MAX }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`);
    assert.deepEqual(auditArguments({ tenant: "t", users, expectVersion: 3n, dryRun: false, bytes: Buffer.alloc(9) }),
      { tenant: "t", users, expectVersion: "3", dryRun: false, bytes: "<9 bytes>" });
    const cut = auditArguments({ reason: "r".repeat(AUDIT_STRING_MAX + 5), users: [...users, "one more"] }) as { reason: string; users: string[] };
    assert.equal(cut.reason, `${"r".repeat(AUDIT_STRING_MAX)}…(+5 chars)`);
    assert.equal(cut.users.length, AUDIT_ARRAY_MAX + 1);
    assert.equal(cut.users.at(-1), "…(+1 more)");
    const huge = { users: Array.from({ length: 5000 }, () => "x".repeat(5000)) };
    const full = JSON.stringify(huge);
    const rec = auditArguments(huge) as { truncated: string; bytes: number; sha256: string };
    assert.equal(rec.bytes, full.length);
    assert.equal(rec.sha256, createHash("sha256").update(full).digest("hex"));
    assert.ok(JSON.stringify(rec).length < AUDIT_ARGUMENTS_MAX_BYTES);
  });

  it("the bound is in UTF-8 bytes, not characters: non-ASCII arguments one byte over it are recorded as size and SHA-256", () => {
    /** A request whose JSON is exactly `bytes` bytes of UTF-8 and about half as many characters. */
    const requestOfBytes = (bytes: number) => {
      const req = { reason: [] as string[], unset: undefined };
      const size = () => Buffer.byteLength(JSON.stringify(req));
      while (size() + 2 * AUDIT_STRING_MAX < bytes) req.reason.push("é".repeat(AUDIT_STRING_MAX - 10));
      req.reason.push("");
      const rest = bytes - size();
      req.reason[req.reason.length - 1] = "é".repeat(Math.floor(rest / 2)) + "a".repeat(rest % 2);
      assert.equal(size(), bytes);
      assert.ok(JSON.stringify(req).length < AUDIT_ARGUMENTS_MAX_BYTES * 0.6, "far fewer characters than bytes");
      return req;
    };
    const at = requestOfBytes(AUDIT_ARGUMENTS_MAX_BYTES);
    assert.deepEqual(auditArguments(at), { reason: at.reason }, "at the bound: recorded whole, the unset field left out");
    const over = requestOfBytes(AUDIT_ARGUMENTS_MAX_BYTES + 1);
    const full = JSON.stringify(over);
    assert.deepEqual(auditArguments(over), {
      truncated: `arguments of ${full.length} characters, over ${AUDIT_ARGUMENTS_MAX_BYTES}`,
      bytes: AUDIT_ARGUMENTS_MAX_BYTES + 1,
      sha256: createHash("sha256").update(full).digest("hex"),
    });
  });

  it("tail stops at about maxBytes, newest first, but always returns at least one record", async () => {
    const log = await AuditLog.open(join(dir, "tail-bytes.log"));
    for (let i = 0; i < 20; i++) await log.append(record(i, "d".repeat(10_000)));
    assert.deepEqual((await log.tail(1000, 35_000)).map((r) => r.requestId), ["r17", "r18", "r19"]);
    assert.deepEqual((await log.tail(1000, 10)).map((r) => r.requestId), ["r19"]);
    assert.equal((await log.tail(1000)).length, 20);
    await log.close();
  });

  it("an existing log with a looser mode is made 0600 when opened", async () => {
    const file = join(dir, "loose.log");
    await writeFile(file, `${JSON.stringify(record(1))}\n`, { mode: 0o644 });
    await chmod(file, 0o644);
    const log = await AuditLog.open(file);
    assert.equal((await stat(file)).mode & 0o777, 0o600);
    await log.append(record(2));
    assert.deepEqual((await log.tail(5)).map((r) => r.requestId), ["r1", "r2"]);
    await log.close();
  });
});
