/** Table-mode text of the `certs` commands. */
import { keyValues } from "../format.js";
import type { CertificateResult, SubjectResult } from "./results.js";

export function subjectText(s: SubjectResult): string {
  return [s.CN !== null ? `CN=${s.CN}` : "", s.OU !== null ? `OU=${s.OU}` : ""].filter(Boolean).join(", ");
}

/** The indented lines under a certs command's headline: files, expiry, fingerprint, extras. */
export function certificateLines(r: CertificateResult, extra: readonly (readonly [string, string])[] = []): string {
  return keyValues([
    ["certificate", r.certPath],
    ["key (0600)", r.keyPath],
    ["expires", r.notAfter],
    ["SHA-256", r.fingerprint256],
    ...extra,
  ]).replace(/^/gm, "  ");
}
