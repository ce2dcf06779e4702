/**
 * What `context show` reports about a context's files: for the CA and the client certificate what
 * the certificate says (subject, role, expiry, fingerprint); for the key its path and mode, never
 * its content (the key file is not opened).
 */
import { X509Certificate } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import path from "node:path";
import { certificateSummary } from "../certs/x509.js";
import type { ContextSelection } from "../context.js";
import type { CertificateFile, ContextShowResult, KeyFile } from "./results.js";

export function certificateFile(file: string, now = Date.now()): CertificateFile {
  let pem: string;
  try {
    pem = readFileSync(file, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { path: file, exists: code !== "ENOENT", certificate: null, problem: code === "ENOENT" ? "missing" : `cannot read: ${code ?? (err as Error).message}` };
  }
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(pem);
  } catch {
    return { path: file, exists: true, certificate: null, problem: "not a PEM certificate" };
  }
  const summary = certificateSummary(cert, now);
  const problem = summary.validNow ? null : Date.parse(summary.notAfter) < now ? `expired on ${summary.notAfter}` : `not valid before ${summary.notBefore}`;
  return { path: file, exists: true, certificate: summary, problem };
}

export function keyFile(file: string): KeyFile {
  let mode: number;
  try {
    mode = statSync(file).mode & 0o777;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return { path: file, exists: code !== "ENOENT", mode: null, problem: code === "ENOENT" ? "missing" : `cannot stat: ${code ?? (err as Error).message}` };
  }
  const octal = `0${mode.toString(8).padStart(3, "0")}`;
  return { path: file, exists: true, mode: octal, problem: (mode & 0o077) !== 0 ? `readable by others than its owner (mode ${octal}): chmod 600 ${file}` : null };
}

/** The report of a selected context (not "none"); `selectedBy` says how it was chosen. */
export function showContext(sel: Exclude<ContextSelection, { kind: "none" }>, selectedBy: string, current: string | null, now = Date.now()): ContextShowResult {
  const file = sel.kind === "named" ? sel.config : sel.path;
  const abs = (p: string | undefined) => (p === undefined ? undefined : path.resolve(path.dirname(file), p));
  const c = sel.context;
  const ca = abs(c.ca);
  const cert = abs(c.cert);
  const key = abs(c.key);
  const named = sel.kind === "named" ? sel : undefined;
  return {
    name: named?.name ?? null,
    file,
    selectedBy,
    current: named !== undefined && named.name === current,
    endpoint: c.endpoint ?? null,
    tenant: c.tenant ?? null,
    gateway: c.gateway ?? null,
    insecure: c.insecure === true,
    ca: ca === undefined ? null : certificateFile(ca, now),
    cert: cert === undefined ? null : certificateFile(cert, now),
    key: key === undefined ? null : keyFile(key),
    devDataDir: named?.context.dev === true && named.context.dataDir !== undefined ? path.resolve(named.context.dataDir) : null,
  };
}
