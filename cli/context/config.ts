/**
 * Reading and writing the config file of the named contexts (`$XDG_CONFIG_HOME/qimctl/config.json`,
 * cli/context.ts says what it holds). Every change is read → change → write under a lock file
 * (`config.json.lock`, O_EXCL, the writer's pid inside), so that `dev up` and `context set` running
 * at once never lose each other's context; the write is a temporary file (mode 0600, fsync'd) renamed
 * over the old one, so a reader sees the old file or the new one, never half of one.
 *
 * Migration from the single context file: when a change creates the config file and the old
 * `$XDG_CONFIG_HOME/qimctl/context.json` exists, that file becomes the context `default` (`dev` if
 * dev up wrote it), current — so the connection every command uses stays what it was. From then on
 * the old file is not read (it is left where it is, unchanged).
 */
import { randomBytes } from "node:crypto";
import { closeSync, fstatSync, fsyncSync, linkSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, unlinkSync, writeFileSync, writeSync } from "node:fs";
import path from "node:path";
import { QimError } from "../../core/errors/index.js";
import { defaultConfigPath, defaultContextPath, parseConfigFile, parseContextFile, type ConfigFile, type NamedContext } from "../context.js";

/** Returns the file's text, or undefined when it does not exist (any other failure throws). */
export function readTextIfExists(file: string): string | undefined {
  try {
    return readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw new QimError("INVALID_ARGUMENT", `cannot read ${file}: ${(err as Error).message}`);
  }
}

/** The config file as it is now; undefined when there is none. */
export function readConfig(file: string): ConfigFile | undefined {
  const text = readTextIfExists(file);
  return text === undefined ? undefined : parseConfigFile(text, file);
}

/** What a change did besides itself: the old context file it imported (creating the config file), if any. */
export interface Imported {
  name: string;
  from: string;
}

export interface ConfigChange<R> {
  config: string;
  result: R;
  imported: Imported | null;
  /** Whether the file was written (false: the change changed nothing). */
  written: boolean;
}

/** The old context file as a named context: its relative paths made absolute (they were relative to it). */
function importLegacy(legacy: string): { name: string; context: NamedContext } | undefined {
  const text = readTextIfExists(legacy);
  if (text === undefined) return undefined;
  let raw: Record<string, unknown> = {};
  try {
    raw = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // parseContextFile below refuses it with the file named
  }
  const ctx: NamedContext = parseContextFile(text, legacy);
  for (const k of ["ca", "cert", "key"] as const) if (ctx[k] !== undefined) ctx[k] = path.resolve(path.dirname(legacy), ctx[k]);
  const dev = raw.dev === true && typeof raw.dataDir === "string";
  if (dev) Object.assign(ctx, { dev: true, dataDir: path.resolve(raw.dataDir as string) });
  return { name: dev ? "dev" : "default", context: ctx };
}

/** Fields in a fixed order, absent ones left out: the file reads the same whoever wrote it. */
function ordered(c: NamedContext): NamedContext {
  const out: NamedContext = {};
  for (const k of ["endpoint", "tenant", "gateway", "ca", "cert", "key", "insecure", "dev", "dataDir"] as const) if (c[k] !== undefined) (out as Record<string, unknown>)[k] = c[k];
  return out;
}

export function configText(cfg: ConfigFile): string {
  const contexts = Object.fromEntries(Object.keys(cfg.contexts).sort().map((n) => [n, ordered(cfg.contexts[n]!)]));
  return `${JSON.stringify({ current: cfg.current, contexts }, null, 2)}\n`;
}

/** Writes `text` to `file` through a temporary file in the same directory: mode 0600, fsync'd, renamed over. */
export function writeAtomically(file: string, text: string): void {
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString("hex")}.tmp`;
  const fd = openSync(tmp, "wx", 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    rmSync(tmp, { force: true });
    throw err;
  }
  closeSync(fd);
  renameSync(tmp, file);
}

const LOCK_WAIT_MS = 5_000;
const LOCK_POLL_MS = 20;

function pidAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

interface SeenLock { pid: number; ino: number; ctimeNs: bigint }

/** The lock file's holder and identity (inode and change time), read from one open descriptor; undefined when there is none. */
function readLock(lockFile: string): SeenLock | undefined {
  let fd: number;
  try {
    fd = openSync(lockFile, "r");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  try {
    const st = fstatSync(fd, { bigint: true });
    return { pid: Number(readFileSync(fd, "utf8").trim()), ino: Number(st.ino), ctimeNs: st.ctimeNs };
  } finally {
    closeSync(fd);
  }
}

/**
 * Removes a lock whose holder is dead — only that lock file, never one a live process took
 * meanwhile. Two processes that both saw the same stale lock would otherwise both delete "the
 * lock", the second deleting the first's fresh one, and both write. So the removal is claimed
 * first: a marker named after the stale file's identity (inode + change time) made by hard link
 * (exclusive); only its maker checks that the lock is still that file and unlinks it. A process
 * that loses the claim just tries again. Nothing can replace the stale file between the check
 * and the unlink: that needs its removal, which needs this claim.
 */
function removeStaleLock(lockFile: string, seen: SeenLock): void {
  const marker = `${lockFile}.stale-${seen.ino}-${seen.ctimeNs}`;
  const tmp = `${lockFile}.${process.pid}.${randomBytes(4).toString("hex")}`;
  writeFileSync(tmp, String(process.pid), { mode: 0o600 });
  try {
    linkSync(tmp, marker);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "EEXIST") {
      // another process is removing this stale lock. Its marker is cleared when that is done
      // (the lock is no longer that file) or when its maker died in between (its pid is in it)
      const now = readLock(lockFile);
      const maker = Number((readTextIfExists(marker) ?? "").trim());
      if (!now || now.ino !== seen.ino || now.ctimeNs !== seen.ctimeNs || !pidAlive(maker)) rmSync(marker, { force: true });
      else sleepSync(LOCK_POLL_MS);
      return;
    }
    throw err;
  } finally {
    rmSync(tmp, { force: true });
  }
  try {
    const now = readLock(lockFile);
    if (now && now.ino === seen.ino && now.ctimeNs === seen.ctimeNs) unlinkSync(lockFile);
  } finally {
    rmSync(marker, { force: true });
  }
}

/** Takes `<config>.lock`; a lock whose pid is gone is taken over. Waits up to 5 s for a live holder. */
function lock(file: string): () => void {
  const lockFile = `${file}.lock`;
  mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    // the lock appears with its pid already in it (a hard link of a file written first): created
    // empty and written after, a second process reading it in between took the empty pid for a
    // dead holder and took the lock over — two writers, one context lost (CI caught it)
    const tmp = `${lockFile}.${process.pid}.${randomBytes(4).toString("hex")}`;
    writeFileSync(tmp, String(process.pid), { mode: 0o600 });
    let linked = false;
    try {
      linkSync(tmp, lockFile);
      linked = true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") {
        rmSync(tmp, { force: true });
        throw err;
      }
    }
    rmSync(tmp, { force: true });
    if (linked) {
      return () => {
        try {
          if (readFileSync(lockFile, "utf8").trim() === String(process.pid)) unlinkSync(lockFile);
        } catch {
          // already gone
        }
      };
    }
    const seen = readLock(lockFile);
    if (seen === undefined) continue; // released meanwhile
    const holder = seen.pid;
    if (!pidAlive(holder) && Date.now() <= deadline) {
      removeStaleLock(lockFile, seen);
      continue;
    }
    if (Date.now() > deadline) {
      throw new QimError("FAILED_PRECONDITION", `${lockFile} is held by pid ${holder} (another qimctl changing the contexts); try again when it has finished, or remove the file if that process is not qimctl`);
    }
    sleepSync(LOCK_POLL_MS);
  }
}

/**
 * Reads the config file (or starts one, importing the old context file), lets `change` modify it
 * in place and writes it back when anything changed. The whole step holds the lock.
 */
export function updateConfig<R>(env: NodeJS.ProcessEnv, home: string, change: (cfg: ConfigFile) => R): ConfigChange<R> {
  const file = defaultConfigPath(env, home);
  const release = lock(file);
  try {
    const existing = readConfig(file);
    let imported: Imported | null = null;
    let cfg: ConfigFile;
    if (existing) cfg = existing;
    else {
      cfg = { current: null, contexts: {} };
      const legacy = defaultContextPath(env, home);
      const old = importLegacy(legacy);
      if (old) {
        cfg.contexts[old.name] = old.context;
        cfg.current = old.name;
        imported = { name: old.name, from: legacy };
      }
    }
    const before = existing ? configText(existing) : undefined;
    const result = change(cfg);
    const after = configText(cfg);
    const written = after !== before;
    if (written) writeAtomically(file, after);
    return { config: file, result, imported, written };
  } finally {
    release();
  }
}
