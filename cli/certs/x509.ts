/**
 * What a certificate says, read with Node's X509Certificate rather than certificateInfo
 * (certs/pki.ts): node-forge reads RSA keys only, and a certificate read here may come from any CA
 * the server trusts (an EC one too). Reads certificates only, never a key.
 */
import { X509Certificate } from "node:crypto";
import type { SubjectResult } from "./results.js";

/** One value of a subject field as the server reads it for the principal (the first, when repeated); null if absent. */
export function subjectField(cert: X509Certificate, key: "CN" | "OU"): string | null {
  const v = (cert.toLegacyObject().subject as unknown as Record<string, string | string[] | undefined>)[key];
  return (Array.isArray(v) ? v[0] : v) ?? null;
}

function issuerCN(cert: X509Certificate): string | null {
  const v = (cert.toLegacyObject().issuer as unknown as Record<string, string | string[] | undefined>).CN;
  return (Array.isArray(v) ? v[0] : v) ?? null;
}

/** Who a certificate names and until when, as `context show` prints it. */
export interface CertificateSummary {
  subject: SubjectResult;
  issuerCN: string | null;
  /** The subject OU: the role the admin API reads from a client certificate. */
  role: string | null;
  notBefore: string;
  notAfter: string;
  /** Whether now is within notBefore..notAfter. */
  validNow: boolean;
  /** SHA-256 of the DER, "AA:BB:…", as the audit log records it. */
  fingerprint256: string;
  serialHex: string;
}

export function certificateSummary(cert: X509Certificate, now = Date.now()): CertificateSummary {
  const notBefore = new Date(cert.validFrom);
  const notAfter = new Date(cert.validTo);
  const subject = { CN: subjectField(cert, "CN"), OU: subjectField(cert, "OU") };
  return {
    subject,
    issuerCN: issuerCN(cert),
    role: subject.OU,
    notBefore: notBefore.toISOString(),
    notAfter: notAfter.toISOString(),
    validNow: notBefore.getTime() <= now && now <= notAfter.getTime(),
    fingerprint256: cert.fingerprint256,
    serialHex: cert.serialNumber.toUpperCase(),
  };
}
