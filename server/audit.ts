import { createHash } from "node:crypto";
import { writeSync } from "node:fs";
import { mkdir, open, readdir, rename, rm, type FileHandle } from "node:fs/promises";
import { basename, dirname, join } from "node:path";
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

/** How a log is rotated: when the current file would grow past `maxBytes`, it becomes FILE.1 (FILE.1 FILE.2 …), keeping `keep` rotated files. */
export interface AuditRotation {
  maxBytes: number;
  keep: number;
}

/** Whoever follows the log (AuditService.FollowAudit): each durable batch, in order; `closed` when the log closes. */
export interface AuditFollower {
  records(batch: readonly AuditRecord[]): void;
  closed(): void;
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
 *
 * With a rotation, a record that would take the file past maxBytes is written to a new file: the
 * full one becomes FILE.1 (FILE.1 becomes FILE.2, …, the one beyond `keep` is dropped). Batches,
 * rotations and the openings of `tail` and `follow` take turns, so a record is in exactly one
 * file and a reader sees each file once.
 */
/**
 * What the log's flushes cost, kept as the log runs (cheap: a counter and a histogram record per
 * flush and per record), read by the server's diagnostics (server/diagnostics.ts). Histograms in ns.
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
  /** Rotations done, and attempts that failed (the log then goes on in the current file). */
  rotations: number;
  rotationFailures: number;
}

export class AuditLog {
  readonly stats: AuditStats = {
    flushes: 0, records: 0, flushNs: createHistogram(), writeNs: createHistogram(), syncNs: createHistogram(), waitNs: createHistogram(), handlerNs: createHistogram(),
    rotations: 0, rotationFailures: 0,
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
  /** Bytes in the current file. */
  private size = 0;
  /** Rotations since open: FILE.i holds generation `generation - i` (see tail). */
  private generation = 0;
  /** After a failed rotation, the next attempt waits until the file has grown by another maxBytes (no retry per batch). */
  private nextRotationAt = 0;
  /**
   * One flush batch, one tail's file opening or one follower's start at a time: a rotation renames
   * files, and a reader that opened FILE then FILE.1 across a rotation would read one file twice.
   */
  private turn: Promise<void> = Promise.resolve();
  private readonly followers = new Set<AuditFollower>();

  private constructor(
    readonly path: string,
    private readonly sync: boolean,
    private readonly keepRecent: number,
    private readonly rotation: AuditRotation | null,
    private readonly log: (line: string) => void,
  ) {}

  /**
   * `keepRecent`: how many of the newest records recent() can answer from memory (default
   * AUDIT_RECENT_MAX); `rotation`: size-based rotation (default none: one file that grows); `log`:
   * where a failed rotation is reported (the log goes on in the current file).
   */
  static async open(path: string, opts: { sync?: boolean; keepRecent?: number; rotation?: AuditRotation | null; log?: (line: string) => void } = {}): Promise<AuditLog> {
    if (opts.rotation && (!(opts.rotation.maxBytes > 0) || !Number.isSafeInteger(opts.rotation.keep) || opts.rotation.keep < 1)) {
      throw new RangeError(`audit log rotation needs maxBytes > 0 and keep >= 1, got ${JSON.stringify(opts.rotation)}`);
    }
    await mkdir(dirname(path), { recursive: true });
    const log = new AuditLog(path, opts.sync ?? true, opts.keepRecent ?? AUDIT_RECENT_MAX, opts.rotation ?? null, opts.log ?? (() => {}));
    log.handle = await openForAppend(path);
    const size = (await log.handle.stat()).size;
    log.size = size;
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
      await this.exclusive(() => this.flushBatch(batch));
    }
    this.flushing = undefined;
  }

  /** Runs `fn` when no flush, rotation or other such step runs (they take turns). */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.turn.then(fn);
    this.turn = run.then(() => {}, () => {});
    return run;
  }

  /**
   * One batch: written (rotating whenever the next record would take the file past maxBytes, so
   * that a file holds at most maxBytes unless one record is larger), made durable, handed to the
   * followers. The rotation's fsync makes the records before it durable, the final fdatasync the
   * rest; the batch's calls are answered only then.
   */
  private async flushBatch(batch: typeof this.queue): Promise<void> {
    const t0 = process.hrtime.bigint();
    try {
      const lines = batch.map((b) => Buffer.from(b.line, "utf8"));
      for (let i = 0; i < lines.length;) {
        let piece = 0;
        let j = i;
        if (this.rotation === null) j = lines.length;
        else {
          if (this.size > 0 && this.size + lines[i]!.length > this.rotation.maxBytes && this.size >= this.nextRotationAt) await this.rotate();
          // as many records as fit, at least one (into a new file, or after a failed rotation)
          const room = this.size >= this.nextRotationAt ? this.rotation.maxBytes - this.size : Infinity;
          while (j < lines.length && (j === i || piece + lines[j]!.length <= room)) piece += lines[j++]!.length;
        }
        await this.writePiece(Buffer.concat([...(this.unterminated ? [Buffer.from("\n")] : []), ...lines.slice(i, j)]));
        i = j;
      }
      const t1 = process.hrtime.bigint();
      this.stats.writeNs.record(Math.max(1, Number(t1 - t0)));
      if (this.sync) {
        await this.handle!.datasync();
        this.stats.syncNs.record(Math.max(1, Number(process.hrtime.bigint() - t1)));
      }
      this.stats.flushes++;
      this.stats.records += batch.length;
      this.stats.flushNs.record(Math.max(1, Number(process.hrtime.bigint() - t0)));
      const records = batch.map((b) => b.record);
      this.remember(records);
      for (const f of this.followers) {
        try {
          f.records(records);
        } catch (err) {
          // a follower's fault is its own: the records are durable and the calls are answered
          this.followers.delete(f);
          this.log(`audit log follower failed: ${(err as Error).message}`);
        }
      }
      for (const b of batch) b.done();
    } catch (err) {
      metrics.auditWriteFailures.inc(batch.length);
      for (const b of batch) b.done(err);
    }
  }

  private async writePiece(data: Buffer): Promise<void> {
    // the file no longer ends with a newline from the first byte written until the last
    this.unterminated = true;
    try {
      await this.writeAll(data);
    } catch (err) {
      if (this.handle) this.size = await this.handle.stat().then((st) => st.size, () => this.size);
      throw err;
    }
    this.size += data.length;
    this.unterminated = false;
  }

  /**
   * FILE → FILE.1 (FILE.1 → FILE.2 … the one beyond `keep` dropped), a new FILE, each step durable:
   * the file leaving is fsync'd (also with fsync off: it will never be written again), the
   * directory is fsync'd after the renames and the new file, so that a crash leaves either the old
   * names or the new ones. Every rotated file is 0600 (the log was made so at open). Runs between
   * two batches (exclusive), so every record is in exactly one file. A failure before FILE was
   * renamed leaves the log writing on in FILE, reported once, retried when it has grown by
   * another maxBytes; a new FILE that cannot be created puts the old name back.
   */
  private async rotate(): Promise<void> {
    const { maxBytes, keep } = this.rotation!;
    const dir = dirname(this.path);
    const name = basename(this.path);
    const fail = (what: string, err: unknown) => {
      this.stats.rotationFailures++;
      metrics.auditRotationFailures.inc();
      this.nextRotationAt = this.size + maxBytes;
      this.log(`audit log ${this.path}: rotation failed (${what}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); writing on in ${name}, next attempt after another ${maxBytes} bytes`);
    };
    try {
      await this.handle!.sync();
      // files beyond `keep` (also those an earlier, larger keep left) go; then each moves up by one
      for (const entry of await readdir(dir)) {
        const m = entry.startsWith(`${name}.`) ? /^(\d+)$/.exec(entry.slice(name.length + 1)) : null;
        if (m && Number(m[1]) >= keep) await rm(join(dir, entry), { force: true });
      }
      for (let i = keep - 1; i >= 1; i--) await renameIfThere(`${this.path}.${i}`, `${this.path}.${i + 1}`);
      await rename(this.path, `${this.path}.1`);
    } catch (err) {
      fail("moving the files", err);
      return;
    }
    let fresh: FileHandle;
    try {
      fresh = await openForAppend(this.path);
    } catch (err) {
      await rename(`${this.path}.1`, this.path).catch(() => {});
      fail(`creating a new ${name}`, err);
      return;
    }
    const old = this.handle!;
    this.handle = fresh;
    this.size = 0;
    this.unterminated = false;
    this.generation++;
    this.nextRotationAt = 0;
    this.stats.rotations++;
    metrics.auditRotations.inc();
    await syncDir(dir).catch((err: unknown) => this.log(`audit log ${this.path}: fsync of ${dir} after a rotation failed: ${(err as Error).message}`));
    await old.close().catch(() => {});
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
   * The newest `limit` records, oldest first, across the rotated files (FILE, then FILE.1, FILE.2 …
   * as far as needed); reads each from its end, 64 KiB at a time, and stops once it has `maxBytes`
   * (then fewer records come back, at least one). Each file is opened between two flushes, and
   * by the generation it holds, so that a rotation meanwhile neither skips nor repeats a file.
   */
  async tail(limit: number, maxBytes = TAIL_MAX_BYTES): Promise<AuditRecord[]> {
    let base: number | undefined;
    return this.readTail(limit, maxBytes, (i) => this.exclusive(async () => {
      base ??= this.generation;
      // FILE.k holds generation `generation - k`: the i-th newest file when the read started
      return i === 0 ? this.openCurrent() : openExisting(`${this.path}.${i + this.generation - base}`);
    }));
  }

  /** Opens the file to read and the size to read it to: the current file as far as it is written. */
  private async openCurrent(): Promise<{ fh: FileHandle; size: number } | null> {
    const fh = await open(this.path, "r");
    return { fh, size: this.size };
  }

  private async readTail(limit: number, maxBytes: number, openNth: (i: number) => Promise<{ fh: FileHandle; size: number } | null>): Promise<AuditRecord[]> {
    const picked: string[] = [];
    let bytes = 0;
    for (let i = 0; picked.length < limit && (picked.length === 0 || bytes < maxBytes); i++) {
      const f = await openNth(i);
      if (f === null) break;
      try {
        const lines = await linesFromEnd(f.fh, f.size, limit - picked.length, maxBytes);
        for (let j = lines.length - 1; j >= 0; j--) {
          bytes += Buffer.byteLength(lines[j]!) + 1;
          if (picked.length > 0 && bytes > maxBytes) break;
          picked.unshift(lines[j]!);
        }
      } finally {
        await f.fh.close();
      }
    }
    return picked.map(parseLine);
  }

  /**
   * Follows the log: the newest `limit` records (0: none), then every batch as it becomes durable,
   * to `follower`, until `stop()` or the log closes. The start is taken between two flushes, so no
   * record is in both the first answer and a batch, nor in neither.
   */
  async follow(limit: number, follower: AuditFollower): Promise<{ initial: AuditRecord[]; stop: () => void }> {
    const initial = await this.exclusive(async () => {
      const first = limit > 0 ? await this.readTail(limit, TAIL_MAX_BYTES, (i) => (i === 0 ? this.openCurrent() : openExisting(`${this.path}.${i}`))) : [];
      if (this.handle === undefined) throw new Error(`audit log ${this.path} is closed`);
      this.followers.add(follower);
      return first;
    });
    return { initial, stop: () => { this.followers.delete(follower); } };
  }

  /** Ends every follow (a server shutting down ends its streams before it waits for them). */
  stopFollowers(): void {
    for (const f of [...this.followers]) {
      this.followers.delete(f);
      f.closed();
    }
  }

  async close(): Promise<void> {
    await this.flushing;
    await this.exclusive(async () => {
      await this.handle?.close();
      this.handle = undefined;
    });
    this.stopFollowers();
  }
}

/** Opens the log for appending, 0600 whatever it was. */
async function openForAppend(path: string): Promise<FileHandle> {
  const fh = await open(path, "a", 0o600);
  // the mode given to open() applies only to a file it creates: an existing log (created by hand,
  // or by an older version, with the umask's 0644) would stay readable by every local user, and
  // it holds every request's arguments
  try {
    await fh.chmod(0o600);
  } catch (err) {
    await fh.close();
    throw new Error(`audit log ${path}: cannot make it 0600 (owner read/write only): ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  return fh;
}

/** A rotated file to read whole; null when there is none (the oldest kept was reached). */
async function openExisting(path: string): Promise<{ fh: FileHandle; size: number } | null> {
  let fh: FileHandle;
  try {
    fh = await open(path, "r");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw err;
  }
  return { fh, size: (await fh.stat()).size };
}

async function renameIfThere(from: string, to: string): Promise<void> {
  try {
    await rename(from, to);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
  }
}

/** Makes a directory's entries durable (renames, a new file): fsync of the directory itself. */
async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, "r");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/**
 * The last `limit` whole lines of the first `size` bytes of a file, oldest first; reads from the
 * end 64 KiB at a time and stops at `limit` lines or once it has read `maxBytes`. A line cut by
 * where the read stopped is left out.
 */
async function linesFromEnd(fh: FileHandle, size: number, limit: number, maxBytes: number): Promise<string[]> {
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
  const lines = Buffer.concat(chunks).toString("utf8").split("\n").filter((l) => l.length > 0);
  // the first line may be cut in the middle when the read did not reach the file's start
  if (pos > 0) lines.shift();
  return lines.slice(-limit);
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
