/**
 * The deny list of revoked client certificates (docs/operator-guide.md "Revoking a certificate"):
 * a text file with one SHA-256 certificate fingerprint per line, in the form `qimctl certs issue`
 * and `qimctl certs fingerprint` print it ("AA:BB:…:FF", 32 bytes; lower case and the 64 hex
 * digits without colons are accepted too). `#` starts a comment, to the end of the line; blank
 * lines are ignored.
 *
 * The server reloads the file without a restart: it polls it (fs.watchFile, every second by
 * default) and reloads on SIGHUP. A file that cannot be read or has a malformed line is not
 * applied: the previous list stays in force and the server logs why; so is an empty (0-byte) file
 * while the list in force is not, which is what a poll sees between an editor's truncate and its
 * write (a list that revokes nothing keeps a comment line). Replacing the file atomically (write a
 * temporary file beside it, then rename it over) avoids reading it half-written at all. At start-up
 * an unreadable or malformed file is an error: a server asked to refuse certificates does not
 * start without knowing which.
 */
import { readFile } from "node:fs/promises";
import { unwatchFile, watchFile, type Stats } from "node:fs";

const COLON_HEX = /^[0-9A-F]{2}(:[0-9A-F]{2}){31}$/i;
const PLAIN_HEX = /^[0-9A-F]{64}$/i;

/** The canonical form ("AA:BB:…", upper case), as Node's `fingerprint256` and grpc-js give it; null if `text` is not one. */
export function normalizeFingerprint(text: string): string | null {
  const t = text.trim();
  if (COLON_HEX.test(t)) return t.toUpperCase();
  if (PLAIN_HEX.test(t)) return t.toUpperCase().match(/../g)!.join(":");
  return null;
}

export class DenyListSyntaxError extends Error {
  constructor(readonly line: number, message: string) {
    super(`line ${line}: ${message}`);
    this.name = "DenyListSyntaxError";
  }
}

/** The fingerprints of a deny list's text; throws DenyListSyntaxError naming the first bad line. */
export function parseDenyList(text: string): Set<string> {
  const out = new Set<string>();
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const hash = lines[i]!.indexOf("#");
    const content = (hash >= 0 ? lines[i]!.slice(0, hash) : lines[i]!).trim();
    if (content === "") continue;
    const fp = normalizeFingerprint(content);
    if (!fp) {
      const shown = content.length > 40 ? `${content.slice(0, 40)}…` : content;
      throw new DenyListSyntaxError(i + 1, `${JSON.stringify(shown)} is not a SHA-256 certificate fingerprint (AA:BB:…:FF, 32 bytes, as \`qimctl certs fingerprint\` prints it)`);
    }
    out.add(fp);
  }
  return out;
}

export interface DenyListOptions {
  /** How often the file is polled, in ms (default 1000); 0 turns polling off (SIGHUP / reload() only). */
  pollMs?: number;
  log: (line: string) => void;
}

/** A deny list file in force: `has()` on every call, reloaded on change. */
export class DenyList {
  private fingerprints: Set<string>;
  private polling = false;
  /** Reloads run one at a time; a change seen during one runs one more. */
  private reloading: Promise<void> | undefined;
  private again: string | undefined;

  private constructor(readonly path: string, initial: Set<string>, private readonly opts: DenyListOptions) {
    this.fingerprints = initial;
  }

  /** Reads the file (an error if it cannot be read or is malformed) and starts polling it. */
  static async open(path: string, opts: DenyListOptions): Promise<DenyList> {
    let text: string;
    try {
      text = await readFile(path, "utf8");
    } catch (err) {
      throw new Error(`deny list ${path}: cannot read it: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
    }
    let set: Set<string>;
    try {
      set = parseDenyList(text);
    } catch (err) {
      throw new Error(`deny list ${path}: ${(err as Error).message}`);
    }
    const list = new DenyList(path, set, opts);
    opts.log(`deny list ${path}: ${set.size} revoked certificate fingerprint(s) loaded (start-up)`);
    const pollMs = opts.pollMs ?? 1000;
    if (pollMs > 0) {
      list.polling = true;
      watchFile(path, { interval: pollMs, persistent: false }, list.onStat);
    }
    return list;
  }

  /** Whether the certificate with this fingerprint ("AA:BB:…", any case) is revoked. */
  has(fingerprint: string): boolean {
    return fingerprint !== "" && this.fingerprints.has(fingerprint.toUpperCase());
  }

  private readonly onStat = (cur: Stats, prev: Stats) => {
    if (cur.mtimeMs === prev.mtimeMs && cur.size === prev.size && cur.ino === prev.ino) return;
    void this.reload(cur.nlink === 0 && cur.ino === 0 ? "file changed (now missing)" : "file changed");
  };

  /**
   * Reads the file again and applies it; on any problem the previous list stays in force. Logs one
   * line either way, with the count in force. Resolves once this reload (and any queued behind it)
   * is done.
   */
  reload(reason: string): Promise<void> {
    if (this.reloading) {
      this.again = reason;
      return this.reloading;
    }
    this.reloading = (async () => {
      let next: string | undefined = reason;
      while (next !== undefined) {
        this.again = undefined;
        await this.reloadOnce(next);
        next = this.again;
      }
      this.reloading = undefined;
    })();
    return this.reloading;
  }

  private async reloadOnce(reason: string): Promise<void> {
    let next: Set<string>;
    try {
      const text = await readFile(this.path, "utf8");
      if (text === "" && this.fingerprints.size > 0) {
        // most likely caught between an editor's truncate and its write: lifting every revocation
        // on that is not worth the risk; a list that revokes nothing keeps at least a comment line
        throw new DenyListSyntaxError(1, "the file is empty (being rewritten?); to revoke nothing, leave a # comment line in it");
      }
      next = parseDenyList(text);
    } catch (err) {
      const why = err instanceof DenyListSyntaxError ? err.message : `cannot read it: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`;
      this.opts.log(`deny list ${this.path}: NOT reloaded (${reason}): ${why}; the previous ${this.fingerprints.size} fingerprint(s) stay in force`);
      return;
    }
    this.fingerprints = next;
    this.opts.log(`deny list ${this.path}: ${next.size} revoked certificate fingerprint(s) loaded (${reason})`);
  }

  async close(): Promise<void> {
    if (this.polling) unwatchFile(this.path, this.onStat);
    this.polling = false;
    await this.reloading;
  }
}
