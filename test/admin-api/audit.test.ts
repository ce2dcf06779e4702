import assert from "node:assert/strict";
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { createHash } from "node:crypto";
import { registry } from "../../core/metrics/index.js";
import { AUDIT_ARGUMENTS_MAX_BYTES, AUDIT_ARRAY_MAX, AUDIT_STRING_MAX, auditArguments, AuditLog, type AuditRecord } from "../../server/audit.js";

/** The files of a rotated log, oldest first (FILE.N … FILE.1, FILE), as this test reads them: names and request ids per file. */
async function rotatedFiles(file: string): Promise<{ name: string; ids: string[]; bytes: number; mode: number }[]> {
  const dir = join(file, "..");
  const base = file.slice(dir.length + 1);
  const names = (await readdir(dir)).filter((n) => n === base || new RegExp(`^${base.replace(/\./g, "\\.")}\\.\\d+$`).test(n));
  const gen = (n: string) => (n === base ? 0 : Number(n.slice(base.length + 1)));
  names.sort((x, y) => gen(y) - gen(x));
  const files = [];
  for (const name of names) if ((await stat(join(dir, name))).isFile()) files.push(name);
  return Promise.all(files.map(async (name) => {
    const text = await readFile(join(dir, name), "utf8");
    const st = await stat(join(dir, name));
    return { name, ids: text.split("\n").filter((l) => l !== "").map((l) => (JSON.parse(l) as AuditRecord).requestId), bytes: st.size, mode: st.mode & 0o777 };
  }));
}

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

  describe("rotation", () => {
    /** About 150 bytes a record: a 1,000-byte file holds a handful. */
    const small = (i: number) => record(i, "x".repeat(20));
    const lineBytes = (i: number) => Buffer.byteLength(`${JSON.stringify(small(i))}\n`);

    it("a record that would pass maxBytes goes to a new file: FILE.1, FILE.2 … keep, the oldest dropped, each 0600 and at most maxBytes", async () => {
      const sub = join(dir, "rot-keep");
      await mkdir(sub);
      const file = join(sub, "audit.log");
      const log = await AuditLog.open(file, { rotation: { maxBytes: 1000, keep: 3 } });
      for (let i = 0; i < 60; i++) await log.append(small(i));
      const files = await rotatedFiles(file);
      assert.deepEqual(files.map((f) => f.name), ["audit.log.3", "audit.log.2", "audit.log.1", "audit.log"], "three rotated files kept, nothing else");
      assert.deepEqual(await readdir(sub), ["audit.log", "audit.log.1", "audit.log.2", "audit.log.3"]);
      for (const f of files) {
        assert.equal(f.mode, 0o600, `${f.name} mode`);
        assert.ok(f.bytes <= 1000, `${f.name} holds ${f.bytes} bytes`);
      }
      // one record at a time: a file is full when the next line would not fit
      const perFile = Math.floor(1000 / lineBytes(10));
      for (const f of files.slice(0, -1)) assert.equal(f.ids.length, perFile, `${f.name} is full`);
      const kept = files.flatMap((f) => f.ids);
      const all = Array.from({ length: 60 }, (_, i) => `r${i}`);
      assert.deepEqual(kept, all.slice(-kept.length), "what is kept is the newest records, in order, each once");
      assert.equal(kept.length, 3 * perFile + files.at(-1)!.ids.length);
      assert.equal(log.stats.rotations, Math.ceil(60 / perFile) - 1);
      // tail reads across the files, newest last
      assert.deepEqual((await log.tail(1000)).map((r) => r.requestId), kept);
      assert.deepEqual((await log.tail(perFile + 2)).map((r) => r.requestId), all.slice(-(perFile + 2)));
      await log.close();
      // reopened: the recent records come from the files too, and the sizes go on from the file's
      const again = await AuditLog.open(file, { rotation: { maxBytes: 1000, keep: 3 } });
      assert.deepEqual(again.recent(16).map((r) => r.requestId), kept.slice(-16));
      await again.close();
    });

    it("concurrent appends across many rotations: every record in exactly one file; tails and follows meanwhile see each record once, in order", async () => {
      const sub = join(dir, "rot-concurrent");
      await mkdir(sub);
      const file = join(sub, "audit.log");
      const log = await AuditLog.open(file, { rotation: { maxBytes: 2000, keep: 1000 } });
      await log.append(small(-1));
      const followed: string[] = [];
      let closed = false;
      const f = await log.follow(1, { records: (b) => followed.push(...b.map((r) => r.requestId)), closed: () => { closed = true; } });
      assert.deepEqual(f.initial.map((r) => r.requestId), ["r-1"]);
      const tails: string[][] = [];
      const n = 2000;
      const appends = Array.from({ length: n }, (_, i) => log.append(small(i)));
      const reading = (async () => {
        for (let k = 0; k < 40; k++) tails.push((await log.tail(50)).map((r) => r.requestId));
      })();
      await Promise.all([...appends, reading]);
      const files = await rotatedFiles(file);
      assert.ok(files.length > 50, `${files.length} files`);
      const everything = files.flatMap((x) => x.ids);
      assert.equal(everything.length, n + 1);
      assert.equal(new Set(everything).size, n + 1, "no record twice");
      assert.deepEqual([...everything].sort(), ["r-1", ...Array.from({ length: n }, (_, i) => `r${i}`)].sort(), "no record missing");
      assert.ok(files.every((x) => x.mode === 0o600 && x.bytes > 0));
      // the appends were issued in order, so the files hold them in order
      assert.deepEqual(everything, ["r-1", ...Array.from({ length: n }, (_, i) => `r${i}`)]);
      const position = new Map(everything.map((id, i) => [id, i]));
      for (const t of tails) {
        const at = t.map((id) => position.get(id)!);
        assert.ok(at.every((p, i) => i === 0 || p === at[i - 1]! + 1), `a tail read during rotations is a run of consecutive records: ${t.join(",")}`);
      }
      assert.deepEqual(followed, everything.slice(1), "the follower got every record after its start, once, in order");
      assert.ok(log.stats.rotations > 50);
      await log.close();
      assert.equal(closed, true, "closing the log ends its follows");
    });

    it("a rotation that fails leaves the log writing on in FILE (nothing lost), reports it once, and retries after another maxBytes", async () => {
      const sub = join(dir, "rot-fail");
      await mkdir(sub);
      const file = join(sub, "audit.log");
      // FILE.1 is a directory with something in it: it cannot be dropped to make room (as root too)
      await mkdir(`${file}.1`);
      await writeFile(join(`${file}.1`, "keep-me"), "x");
      const lines: string[] = [];
      const counted = async (name: string) => (await registry.getSingleMetric(name)!.get()).values[0]?.value ?? 0;
      const failuresBefore = await counted("qim_admin_audit_rotation_failures_total");
      const rotationsBefore = await counted("qim_admin_audit_rotations_total");
      const log = await AuditLog.open(file, { rotation: { maxBytes: 1000, keep: 1 }, log: (l) => lines.push(l) });
      const perFile = Math.floor(1000 / lineBytes(10));
      for (let i = 0; i < perFile + 3; i++) await log.append(small(i));
      assert.equal(lines.length, 1, lines.join("\n"));
      assert.match(lines[0]!, /rotation failed \(moving the files: .*\); writing on in audit\.log, next attempt after another 1000 bytes/);
      assert.equal(log.stats.rotationFailures, 1);
      assert.equal(await counted("qim_admin_audit_rotation_failures_total") - failuresBefore, 1, "the failure is on /metrics, for an alert");
      assert.equal((await rotatedFiles(file)).at(-1)!.ids.length, perFile + 3, "every record in audit.log");
      await rm(`${file}.1`, { recursive: true });
      for (let i = perFile + 3; i < 3 * perFile; i++) await log.append(small(i));
      assert.equal(log.stats.rotations, 1, "retried once the file grew by another maxBytes");
      assert.equal(await counted("qim_admin_audit_rotations_total") - rotationsBefore, 1);
      const files = await rotatedFiles(file);
      assert.deepEqual(files.map((x) => x.name), ["audit.log.1", "audit.log"]);
      assert.deepEqual(files.flatMap((x) => x.ids), Array.from({ length: 3 * perFile }, (_, i) => `r${i}`));
      await log.close();
    });
  });
});
