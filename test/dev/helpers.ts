/**
 * Helpers of the dev-stack tests: running the real `bin/qimctl.js` with a given environment and
 * working directory, finding the processes of a data dir through /proc (the same way a person
 * would with ps: by command line and working directory), and looking for a secret in files,
 * command outputs and processes.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import path from "node:path";
import { baseEnv, QIMCTL, ROOT, type Run } from "../e2e/qimctl.js";

export { baseEnv, QIMCTL, ROOT, type Run };

/** Runs qimctl; `json: true` adds --output json and parses stdout (exit 0) or the error object (stderr). */
export function qimctl(args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string; json?: boolean; timeoutMs?: number } = {}): Promise<Run> {
  const argv = opts.json === false ? args : [...args, "--output", "json"];
  return new Promise((resolve) => {
    execFile(process.execPath, [QIMCTL, ...argv], { cwd: opts.cwd ?? ROOT, env: { ...baseEnv, ...opts.env }, timeout: opts.timeoutMs ?? 120_000 }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : -1) : 0;
      let json: unknown;
      if (opts.json !== false) {
        try {
          json = code === 0 ? JSON.parse(stdout) : JSON.parse(stderr).error;
        } catch {
          json = undefined;
        }
      }
      resolve({ code, stdout, stderr, json });
    });
  });
}

export function ok(r: Run, what: string): any {
  assert.equal(r.code, 0, `${what}: exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  return r.json;
}

/** Whether the pid runs (a zombie has exited: only its reaping is pending). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

export interface Proc {
  pid: number;
  cmdline: string;
  cwd: string | null;
}

/** Live processes whose command line or working directory mentions `dir` (this process excluded). */
export function processesMentioning(dir: string): Proc[] {
  const out: Proc[] = [];
  for (const e of readdirSync("/proc")) {
    if (!/^\d+$/.test(e) || Number(e) === process.pid) continue;
    const pid = Number(e);
    let cmdline = "";
    let cwd: string | null = null;
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean).join(" ");
    } catch {
      continue;
    }
    try {
      cwd = readlinkSync(`/proc/${pid}/cwd`);
    } catch {
      // gone, or not ours to read
    }
    if ((cmdline.includes(dir) || (cwd !== null && (cwd === dir || cwd.startsWith(`${dir}/`)))) && alive(pid)) out.push({ pid, cmdline, cwd });
  }
  return out;
}

/** Safety net for after(): SIGKILLs whatever still mentions `dir`, returns what it found. */
export function killMentioning(dir: string): Proc[] {
  const left = processesMentioning(dir);
  for (const p of left) {
    try {
      process.kill(p.pid, "SIGKILL");
    } catch {
      // gone
    }
  }
  return left;
}

/** Every file under `dir` (recursively) whose bytes contain `secret`, relative to `dir`, except the files named in `except` (relative). */
export function filesHolding(dir: string, secret: string, except: readonly string[] = []): string[] {
  const out: string[] = [];
  const needle = Buffer.from(secret);
  const walk = (rel: string) => {
    for (const e of readdirSync(path.join(dir, rel), { withFileTypes: true })) {
      const child = path.join(rel, e.name);
      if (e.isDirectory()) walk(child);
      else if (e.isFile() && !except.includes(child) && readFileSync(path.join(dir, child)).includes(needle)) out.push(child);
    }
  };
  walk("");
  return out;
}

/** Which of /proc/<pid>/cmdline and /proc/<pid>/environ (the process title, its arguments, its environment) contain `secret`. */
export function processHolding(pid: number, secret: string): string[] {
  const needle = Buffer.from(secret);
  return ["cmdline", "environ"].filter((f) => readFileSync(`/proc/${pid}/${f}`).includes(needle)).map((f) => `/proc/${pid}/${f}`);
}

/** The runs (stdout and stderr) whose output contains `secret`, by their arguments. */
export function runsHolding(runs: readonly (Run & { args: readonly string[] })[], secret: string): string[] {
  return runs.filter((r) => r.stdout.includes(secret) || r.stderr.includes(secret)).map((r) => r.args.join(" "));
}
