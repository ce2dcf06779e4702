/**
 * What the `certs` commands share: where files go, refusing to overwrite unless --force, reading
 * the CA, writing a pair. node-forge (certs/pki.ts) is imported lazily by the commands: it is the
 * slowest import of the CLI and only these commands need it.
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import * as Flags from "@oclif/core/flags";
import type { PemPair } from "../../certs/pki.js";
import { UsageError } from "../exit-codes.js";
import { certificateResult, type CertificateResult } from "./results.js";

export const DEFAULT_PKI_DIR = path.join(".qim", "pki");

export const pkiDirFlag = Flags.string({ char: "d", default: DEFAULT_PKI_DIR, description: "directory of the PKI files (created if missing)" });
export const forceFlag = Flags.boolean({ description: "replace files that already exist" });

/** A file name from a certificate name: letters, digits, '.', '_' and '-' kept, the rest '_'. */
export function fileBase(name: string): string {
  const base = name.trim().replace(/[^A-Za-z0-9._-]/g, "_").replace(/^\.+/, "_");
  return base === "" ? "_" : base;
}

/** Refuses before anything is written, so that a refusal never leaves half a pair on disk. */
export function refuseExisting(files: readonly string[], force: boolean): void {
  if (force) return;
  const existing = files.filter((f) => existsSync(f));
  if (existing.length > 0) {
    throw Object.assign(new Error(`refusing to overwrite ${existing.join(", ")}: already exists (use --force to replace)`), { code: "EEXIST" });
  }
}

export function readCaFile(file: string, flag: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (err) {
    const hint = (err as NodeJS.ErrnoException).code === "ENOENT" ? " (create a CA with `qimctl certs init`, or point " + flag + " at yours)" : "";
    throw new UsageError(flag, `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}${hint}`);
  }
}

export function positiveDays(flag: string, days: number): number {
  if (!Number.isInteger(days) || days < 1 || days > 36500) throw new UsageError(flag, `must be a whole number of days from 1 to 36500, got ${days}`);
  return days;
}

/**
 * Writes a certificate and its key (key first, 0600; refusing to replace unless `force`) and
 * returns what the command reports.
 */
export async function writeCertificate(pair: PemPair, certPath: string, keyPath: string, role: string | null, force: boolean): Promise<CertificateResult> {
  const { certificateInfo, writePkiFile } = await import("../../certs/pki.js");
  writePkiFile(keyPath, pair.keyPem, { private: true, overwrite: force });
  writePkiFile(certPath, pair.certPem, { private: false, overwrite: force });
  return certificateResult(certificateInfo(pair.certPem), certPath, keyPath, role);
}

/**
 * The PKI dirs of the dev stacks this machine knows, each with its CA present: those of the named
 * contexts `qimctl dev up` (and the demo) wrote — marked `"dev": true` with their data dir — and the
 * default data dirs .qim/dev and .qim/demo under `cwd`. Absolute, without duplicates, sorted.
 */
export function devPkiDirs(contexts: Readonly<Record<string, { dev?: boolean; dataDir?: string }>>, cwd: string): string[] {
  const dataDirs = [
    ...Object.values(contexts).filter((c) => c.dev === true && typeof c.dataDir === "string").map((c) => path.resolve(c.dataDir!)),
    // the default data dirs of dev up and demo (cli/dev/stack.ts)
    path.resolve(cwd, ".qim", "dev"),
    path.resolve(cwd, ".qim", "demo"),
  ];
  return [...new Set(dataDirs.map((d) => path.join(d, "pki")))].filter((pki) => existsSync(path.join(pki, "ca.crt")) && existsSync(path.join(pki, "ca.key"))).sort();
}

/** An argument as a shell reads it back: quoted when it holds anything but plain characters. */
export function shellWord(s: string): string {
  return /^[\w./:@=+,-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}
