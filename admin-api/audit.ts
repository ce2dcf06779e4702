import { mkdir, open, type FileHandle } from "node:fs/promises";
import { dirname } from "node:path";

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

/**
 * The append-only audit log: one JSON line per mutating or refused call, on disk (fdatasync) before
 * the call's answer returns. Writes that arrive while a flush is in progress are flushed together
 * (group commit), so the durability costs one sync per batch, not per call. The file is opened
 * with O_APPEND; nothing in the API can write to it except through `append`, nor truncate it.
 */
export class AuditLog {
  private handle: FileHandle | undefined;
  private queue: { line: string; done: (err?: unknown) => void }[] = [];
  /** The flush loop while it runs. */
  private flushing: Promise<void> | undefined;

  private constructor(readonly path: string, private readonly sync: boolean) {}

  static async open(path: string, opts: { sync?: boolean } = {}): Promise<AuditLog> {
    await mkdir(dirname(path), { recursive: true });
    const log = new AuditLog(path, opts.sync ?? true);
    log.handle = await open(path, "a", 0o600);
    return log;
  }

  append(record: AuditRecord): Promise<void> {
    const line = JSON.stringify(record) + "\n";
    return new Promise((resolve, reject) => {
      this.queue.push({ line, done: (err) => (err ? reject(err) : resolve()) });
      // flush() is at its first await when this assignment runs, and clears it in the same
      // step in which it sees the queue empty, so no entry can be left behind
      if (!this.flushing) this.flushing = this.flush();
    });
  }

  private async flush(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, this.queue.length);
      try {
        await this.handle!.write(batch.map((b) => b.line).join(""));
        if (this.sync) await this.handle!.datasync();
        for (const b of batch) b.done();
      } catch (err) {
        for (const b of batch) b.done(err);
      }
    }
    this.flushing = undefined;
  }

  /** The newest `limit` records, oldest first; reads the file from its end, 64 KiB at a time. */
  async tail(limit: number): Promise<AuditRecord[]> {
    const fh = await open(this.path, "r");
    try {
      const size = (await fh.stat()).size;
      let pos = size;
      const chunks: Buffer[] = [];
      let newlines = 0;
      while (pos > 0 && newlines <= limit) {
        const len = Math.min(64 * 1024, pos);
        pos -= len;
        const buf = Buffer.alloc(len);
        await fh.read(buf, 0, len, pos);
        chunks.unshift(buf);
        for (const b of buf) if (b === 0x0a) newlines++;
      }
      // decoded once, so a UTF-8 character across two chunks stays whole
      const text = Buffer.concat(chunks).toString("utf8");
      const lines = text.split("\n").filter((l) => l.length > 0);
      // the first line may be cut in the middle when the read did not reach the file's start
      if (pos > 0) lines.shift();
      return lines.slice(-limit).map((l) => JSON.parse(l) as AuditRecord);
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
