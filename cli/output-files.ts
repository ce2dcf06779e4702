/**
 * Files a command writes on the operator's machine (a drill's JSON report, JUnit XML for CI):
 * checked before anything is sent, written whole, and by default never into the working
 * directory (a CI checkout or a repository would collect them): reports go under the XDG state
 * directory, or into the dev stack's data dir when the connection is the dev stack's.
 */
import { accessSync, constants, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import path from "node:path";
import type { ResolvedConnection } from "./context.js";
import { fileSystemReason, UsageError } from "./exit-codes.js";

const reason = (err: unknown) => fileSystemReason(err) ?? (err as NodeJS.ErrnoException).code ?? (err as Error).message;

/** A file the command will write: its directory exists and is writable, and it is not a directory. Returns it absolute. */
export function writableFile(flag: string, file: string): string {
  const abs = path.resolve(file);
  try {
    if (statSync(abs).isDirectory()) throw new UsageError(flag, `${abs} is a directory; give a file name`);
  } catch (err) {
    if (err instanceof UsageError) throw err;
    // absent: it will be created
  }
  try {
    accessSync(path.dirname(abs), constants.W_OK);
  } catch (err) {
    throw new UsageError(flag, `cannot write into ${path.dirname(abs)}: ${reason(err)}`);
  }
  return abs;
}

/**
 * A directory the command will write into: an existing writable directory, or one that can be
 * created (its nearest existing ancestor is a writable directory). Nothing is created here: a
 * command refused later (a confirmation answered no) leaves nothing behind. Returns it absolute.
 */
export function writableDir(flag: string, dir: string): string {
  const abs = path.resolve(dir);
  let probe = abs;
  for (;;) {
    let isDir: boolean | undefined;
    try {
      isDir = statSync(probe).isDirectory();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw new UsageError(flag, `cannot write into ${abs}: ${reason(err)}`);
    }
    if (isDir === false) throw new UsageError(flag, `cannot write into ${abs}: ${probe} is not a directory`);
    if (isDir === true) break;
    probe = path.dirname(probe);
  }
  try {
    accessSync(probe, constants.W_OK);
  } catch (err) {
    throw new UsageError(flag, `cannot write into ${abs}${probe !== abs ? ` (cannot create it in ${probe})` : ""}: ${reason(err)}`);
  }
  return abs;
}

/**
 * The data dir of the dev stack when the connection's endpoint comes from a context that `qimctl
 * dev up` (or `qimctl demo`) wrote — a named context of the config file, whatever its name, or a
 * context file such as `<data-dir>/context.json` — marked `"dev": true` with its `dataDir`; null
 * otherwise (an endpoint from a flag or QIMCTL_ENDPOINT may be any server).
 */
export function devDataDirOf(conn: ResolvedConnection): string | null {
  if (conn.endpoint?.source !== "context" || !conn.contextPath) return null;
  try {
    const raw = JSON.parse(readFileSync(conn.contextPath, "utf8")) as { dev?: unknown; dataDir?: unknown; contexts?: Record<string, { dev?: unknown; dataDir?: unknown }> };
    // a named context lives in the config file's "contexts"; a context file is the object itself
    const ctx = conn.contextName !== undefined ? raw.contexts?.[conn.contextName] : raw;
    return ctx?.dev === true && typeof ctx.dataDir === "string" && ctx.dataDir !== "" ? path.resolve(path.dirname(conn.contextPath), ctx.dataDir) : null;
  } catch {
    return null;
  }
}

/** A drill report's file name in a report directory (drill rebuild's --report-dir and its default, the demo's). */
export function drillReportName(drillId: string): string {
  return `qim-drill-${drillId}.json`;
}

/** What drillReportName gives: what `dev down --purge` removes from a dev stack's data dir. */
export const DRILL_REPORT_NAME = /^qim-drill-.*\.json$/;

/** `$XDG_STATE_HOME/qimctl/reports`, else `~/.local/state/qimctl/reports` (a relative XDG_STATE_HOME is ignored, as the spec says). */
export function stateReportsDir(env: NodeJS.ProcessEnv, home: string): string {
  const base = env.XDG_STATE_HOME && path.isAbsolute(env.XDG_STATE_HOME) ? env.XDG_STATE_HOME : path.join(home, ".local", "state");
  return path.join(base, "qimctl", "reports");
}

/**
 * Writes the file whole or not at all (a temporary file beside it, then a rename): a CI step that
 * reads it never sees half a document, and a failed write leaves the previous file as it was.
 * Missing directories are created (with `dirMode` when given).
 */
export function writeFileWhole(file: string, text: string, dirMode?: number): void {
  mkdirSync(path.dirname(file), { recursive: true, ...(dirMode !== undefined ? { mode: dirMode } : {}) });
  const tmpDir = mkdtempSync(path.join(path.dirname(file), ".qimctl-"));
  const tmp = path.join(tmpDir, path.basename(file));
  try {
    writeFileSync(tmp, text);
    renameSync(tmp, file);
  } finally {
    rmSync(tmpDir, { recursive: true, force: true });
  }
}
