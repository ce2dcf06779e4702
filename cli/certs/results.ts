/** The JSON results of the `certs` commands (docs/operator-guide.md). */
import path from "node:path";
import type { CertificateInfo } from "../../certs/pki.js";

/** The subject fields the admin API reads: CN is the principal, OU the role; null when absent. */
export interface SubjectResult {
  CN: string | null;
  OU: string | null;
}

/** What `certs init` and `certs issue-server` print; `certs issue` adds to it. */
export interface CertificateResult {
  subject: SubjectResult;
  issuerCN: string | null;
  /** The role a client certificate carries (its OU), null for a CA or server certificate. */
  role: string | null;
  notBefore: string;
  notAfter: string;
  /** SHA-256 of the DER, "AA:BB:…", as the server's audit log shows it. */
  fingerprint256: string;
  serialHex: string;
  /** DNS names and IP addresses of a server certificate. */
  sans: string[];
  certPath: string;
  keyPath: string;
}

export function certificateResult(info: CertificateInfo, certPath: string, keyPath: string, role: string | null): CertificateResult {
  return {
    subject: { CN: info.subject.CN, OU: info.subject.OU },
    issuerCN: info.issuerCN,
    role,
    notBefore: info.notBefore.toISOString(),
    notAfter: info.notAfter.toISOString(),
    fingerprint256: info.fingerprint256,
    serialHex: info.serialHex,
    sans: [...info.sans],
    certPath: path.resolve(certPath),
    keyPath: path.resolve(keyPath),
  };
}

export interface IssueResult extends CertificateResult {
  caPath: string;
  /** The file --write-context wrote: the context file, or the config file holding the named context; else null. */
  contextPath: string | null;
  /** The named context --write-context wrote (and made current), else null (none, or a context file). */
  contextName: string | null;
}

export interface FingerprintEntry {
  certPath: string;
  /** SHA-256 of the DER, "AA:BB:…", as the audit log and the deny list have it. */
  fingerprint256: string;
  subject: SubjectResult;
  notAfter: string;
  serialHex: string;
  /** The line to append to a deny list: the fingerprint and a comment naming the certificate. */
  denyListLine: string;
}

export interface FingerprintResult {
  certificates: FingerprintEntry[];
}
