import { createHash } from "node:crypto";
import { writeSync } from "node:fs";
import { mkdir, open, type FileHandle } from "node:fs/promises";
import { dirname } from "node:path";
import { createHistogram, type RecordableHistogram } from "node:perf_hooks";
import { metrics } from "./metrics.js";

export interface AuditRecord {
  time: string;
  principal: string;
  role: string;
  rpc: string;
  arguments: unknown;
  result: string;
  detail: string;
  durationMs: number;
  requestId: string;
  fingerprint: string;
}

/** A string argument is recorded up to this many characters (reasons are at most 500). */
export const AUDIT_STRING_MAX = 1024;
/** An array argument is recorded up to this many elements (a membership change names at most 1,000 users). */
export const AUDIT_ARRAY_MAX = 1000;
/** Arguments whose JSON is still larger are recorded as their size and SHA-256 only. */
export const AUDIT_ARGUMENTS_MAX_BYTES = 64 * 1024;
/** How many of the newest records an AuditLog keeps in memory by default (the dashboard shows 8). */
export const AUDIT_RECENT_MAX = 16;
/** A flush of at most this many bytes is written synchronously (then fdatasync'd asynchronously). */
export const SYNC_WRITE_MAX_BYTES = 256 * 1024;
/** TailAudit answers at most about this many bytes of entries (gRPC clients refuse 4 MiB by default). */
export const TAIL_MAX_BYTES = 3 * 1024 * 1024;

function bounded(v: unknown): unknown {
  if (typeof v === "bigint") return v.toString();
  if (typeof v === "string") return v.length > AUDIT_STRING_MAX ? `${v.slice(0, AUDIT_STRING_MAX)}…(+${v.length - AUDIT_STRING_MAX} chars)` : v;
  if (Buffer.isBuffer(v) || v instanceof Uint8Array) return `<${v.length} bytes>`;
  if (Array.isArray(v)) {
    const head = v.slice(0, AUDIT_ARRAY_MAX).map(bounded);
    return v.length > AUDIT_ARRAY_MAX ? [...head, `…(+${v.length - AUDIT_ARRAY_MAX} more)`] : head;
  }
  // an unset optional field is left out, as JSON.stringify leaves it out of the file
  if (v && typeof v === "object") return Object.fromEntries(Object.entries(v).filter(([, x]) => x !== undefined).map(([k, x]) => [k, bounded(x)]));
  return v;
}

/**
 * A call's request as the audit log records it: JSON-safe (u64 as strings, bytes as their length)
 * and bounded, so that no caller — a refused one included, whose request is audited too — can
 * write more than about 64 KiB into the log per call, nor make TailAudit's answer too large to
 * receive. Strings are cut at AUDIT_STRING_MAX characters and arrays at AUDIT_ARRAY_MAX elements,
 * each with a marker saying how much was left out; what is still over AUDIT_ARGUMENTS_MAX_BYTES is
 * recorded as `{ truncated, bytes, sha256 }` of the full request's JSON.
 */
export function auditArguments(request: unknown): unknown {
  const out = bounded(request);
  // bounded() already made it plain JSON data (u64 as strings, bytes as their length): append()
  // serialises it, so this measures it and nothing more
  if (Buffer.byteLength(JSON.stringify(out) ?? "null") <= AUDIT_ARGUMENTS_MAX_BYTES) return out;
  const full = JSON.stringify(request, (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v)) ?? "null";
  return { truncated: `arguments of ${full.length} characters, over ${AUDIT_ARGUMENTS_MAX_BYTES}`, bytes: Buffer.byteLength(full), sha256: createHash("sha256").update(full).digest("hex") };
}

/**
 * The append-only audit log: one JSON line per mutating or refused call, on disk (fdatasync) before
 * the call's answer returns. Writes that arrive while a flush is in progress are flushed together
 * (group commit), so the durability costs one sync per batch, not per call. The file is opened
 * with O_APPEND; nothing in the API can write to it except through `append`, nor truncate it.
 *
 * A write the OS cuts short (disk full, file size limit) is continued until every byte is written
 * or the OS refuses with an error; only then is a record reported durable. A write that failed part
 * way leaves part of a line: the next write starts with a newline, so that the cut line stays a
 * line of its own and every record after it parses (the same at open, for a file whose last line
 * a crash cut). `tail` reports such a line as a record with result MALFORMED instead of failing.
 */
/**
 * What the log's flushes cost, kept as the log runs (cheap: a counter and a histogram record per
 * flush and per record), read by the server's diagnostics (admin-api/observe.ts). Histograms in ns.
 */
export interface AuditStats {
  flushes: number;
  records: number;
  /** One write + fdatasync of a batch, and each of the two. */
  flushNs: RecordableHistogram;
  writeNs: RecordableHistogram;
  syncNs: RecordableHistogram;
  /** From append() to the record being durable (what a call's answer waits for). */
  waitNs: RecordableHistogram;
  /** The durationMs the records carry (authorisation + handler, before the audit), in ns. */
  handlerNs: RecordableHistogram;
}

export class AuditLog {
  readonly stats: AuditStats = {
    flushes: 0, records: 0, flushNs: createHistogram(), writeNs: createHistogram(), syncNs: createHistogram(), waitNs: createHistogram(), handlerNs: createHistogram(),
  };
  private handle: FileHandle | undefined;
  private queue: { record: AuditRecord; line: string; done: (err?: unknown) => void }[] = [];
  /**
   * The newest records, oldest first, at most `keepRecent`: read from the file once at open, then
   * kept up by append() as records become durable, so that the dashboard's snapshots (every
   * watcher, every tick) do not re-read the file. This process is the log's only writer.
   */
  private newest: AuditRecord[] = [];
  /** The flush loop while it runs. */
  private flushing: Promise<void> | undefined;
  /** The file may end in the middle of a line (a write failed part way, or a crash cut one). */
  private unterminated = false;

  private constructor(readonly path: string, private readonly sync: boolean, private readonly keepRecent: number) {}

  /** `keepRecent`: how many of the newest records recent() can answer from memory (default AUDIT_RECENT_MAX). */
  static async open(path: string, opts: { sync?: boolean; keepRecent?: number } = {}): Promise<AuditLog> {
    await mkdir(dirname(path), { recursive: true });
    const log = new AuditLog(path, opts.sync ?? true, opts.keepRecent ?? AUDIT_RECENT_MAX);
    log.handle = await open(path, "a", 0o600);
    // the mode given to open() applies only to a file it creates: an existing log (created by hand,
    // or by an older version, with the umask's 0644) would stay readable by every local user, and
    // it holds every request's arguments
    try {
      await log.handle.chmod(0o600);
    } catch (err) {
      await log.handle.close();
      throw new Error(`audit log ${path}: cannot make it 0600 (owner read/write only): ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    const size = (await log.handle.stat()).size;
    if (size > 0) {
      const last = Buffer.alloc(1);
      const rfh = await open(path, "r");
      try {
        await rfh.read(last, 0, 1, size - 1);
      } finally {
        await rfh.close();
      }
      log.unterminated = last[0] !== 0x0a;
      if (log.keepRecent > 0) log.newest = await log.tail(log.keepRecent);
    }
    return log;
  }

  append(record: AuditRecord): Promise<void> {
    const line = JSON.stringify(record) + "\n";
    const t0 = process.hrtime.bigint();
    if (record.durationMs > 0) this.stats.handlerNs.record(Math.max(1, Math.round(record.durationMs * 1e6)));
    return new Promise((resolve, reject) => {
      this.queue.push({ record, line, done: (err) => {
        this.stats.waitNs.record(Math.max(1, Number(process.hrtime.bigint() - t0)));
        if (err) reject(err); else resolve();
      } });
      // flush() is at its first await when this assignment runs, and clears it in the same
      // step in which it sees the queue empty, so no entry can be left behind
      if (!this.flushing) this.flushing = this.flush();
    });
  }

  private async flush(): Promise<void> {
    // append() assigns this.flushing when this returns, at its first await: with a write that
    // does not wait, that await must come first
    await undefined;
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.queue.length);
      const t0 = process.hrtime.bigint();
      try {
        const data = Buffer.from((this.unterminated ? "\n" : "") + batch.map((b) => b.line).join(""), "utf8");
        // the file no longer ends with a newline from the first byte written until the last
        this.unterminated = true;
        await this.writeAll(data);
        this.unterminated = false;
        const t1 = process.hrtime.bigint();
        this.stats.writeNs.record(Math.max(1, Number(t1 - t0)));
        if (this.sync) {
          await this.handle!.datasync();
          this.stats.syncNs.record(Math.max(1, Number(process.hrtime.bigint() - t1)));
        }
        this.stats.flushes++;
        this.stats.records += batch.length;
        this.stats.flushNs.record(Math.max(1, Number(process.hrtime.bigint() - t0)));
        this.remember(batch.map((b) => b.record));
        for (const b of batch) b.done();
      } catch (err) {
        metrics.auditWriteFailures.inc(batch.length);
        for (const b of batch) b.done(err);
      }
    }
    this.flushing = undefined;
  }

  /**
   * Writes every byte or throws. A batch up to SYNC_WRITE_MAX_BYTES is written with writeSync:
   * into the page cache that takes microseconds, where an asynchronous write costs a thread-pool
   * round trip, and so a turn of a busy event loop, before the fdatasync can even start (the
   * durability is the fdatasync's, either way). Larger batches are written asynchronously.
   */
  private async writeAll(data: Buffer): Promise<void> {
    for (let off = 0; off < data.length;) {
      const bytesWritten = data.length <= SYNC_WRITE_MAX_BYTES
        ? writeSync(this.handle!.fd, data, off, data.length - off)
        : (await this.handle!.write(data, off, data.length - off)).bytesWritten;
      if (bytesWritten <= 0) throw new Error(`audit log ${this.path}: the OS wrote nothing`);
      off += bytesWritten;
    }
  }

  private remember(records: AuditRecord[]): void {
    if (this.keepRecent === 0) return;
    this.newest.push(...records);
    if (this.newest.length > this.keepRecent) this.newest.splice(0, this.newest.length - this.keepRecent);
  }

  /**
   * The newest `limit` records (at most `keepRecent`), oldest first, from memory: what tail(limit)
   * would read, without reading the file.
   */
  recent(limit: number): AuditRecord[] {
    if (limit > this.keepRecent) throw new RangeError(`recent(${limit}): this audit log keeps the newest ${this.keepRecent} records only`);
    return limit <= 0 ? [] : this.newest.slice(-limit);
  }

  /**
   * The newest `limit` records, oldest first; reads the file from its end, 64 KiB at a time, and
   * stops once it has `maxBytes` (then fewer records come back, at least one).
   */
  async tail(limit: number, maxBytes = TAIL_MAX_BYTES): Promise<AuditRecord[]> {
    const fh = await open(this.path, "r");
    try {
      const size = (await fh.stat()).size;
      let pos = size;
      const chunks: Buffer[] = [];
      let newlines = 0;
      let read = 0;
      while (pos > 0 && newlines <= limit && read < maxBytes) {
        const len = Math.min(64 * 1024, pos);
        pos -= len;
        const buf = Buffer.alloc(len);
        await fh.read(buf, 0, len, pos);
        chunks.unshift(buf);
        read += len;
        for (const b of buf) if (b === 0x0a) newlines++;
      }
      // decoded once, so a UTF-8 character across two chunks stays whole
      const text = Buffer.concat(chunks).toString("utf8");
      const lines = text.split("\n").filter((l) => l.length > 0);
      // the first line may be cut in the middle when the read did not reach the file's start
      if (pos > 0) lines.shift();
      const picked: string[] = [];
      let bytes = 0;
      for (let i = lines.length - 1; i >= 0 && picked.length < limit; i--) {
        bytes += lines[i]!.length + 1;
        if (picked.length > 0 && bytes > maxBytes) break;
        picked.unshift(lines[i]!);
      }
      return picked.map(parseLine);
    } finally {
      await fh.close();
    }
  }

  async close(): Promise<void> {
    await this.flushing;
    await this.handle?.close();
    this.handle = undefined;
  }
}

/** A line of the log; one that is not a record (a write cut short) comes back as result MALFORMED. */
function parseLine(line: string): AuditRecord {
  try {
    const rec = JSON.parse(line) as AuditRecord;
    if (rec && typeof rec === "object" && typeof rec.rpc === "string") return rec;
  } catch {
    // below
  }
  return {
    time: "", principal: "", role: "", rpc: "", arguments: null, result: "MALFORMED",
    detail: `not an audit record (a write cut short?): ${JSON.stringify(line.slice(0, 200))}`, durationMs: 0, requestId: "", fingerprint: "",
  };
}
