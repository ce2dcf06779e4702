import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import { Flags } from "@oclif/core";
import { BaseCommand } from "../../base.js";
import { UsageError } from "../../exit-codes.js";

export interface FingerprintEntry {
  certPath: string;
  /** SHA-256 of the DER, "AA:BB:…", as the audit log and the deny list have it. */
  fingerprint256: string;
  subject: { CN: string | null; OU: string | null };
  notAfter: string;
  serialHex: string;
  /** The line to append to a deny list: the fingerprint and a comment naming the certificate. */
  denyListLine: string;
}

export interface FingerprintResult {
  certificates: FingerprintEntry[];
}

/** One value of a subject field, from Node's "CN=alice\nOU=operator" form. */
function subjectField(subject: string, key: string): string | null {
  for (const line of subject.split("\n")) if (line.startsWith(`${key}=`)) return line.slice(key.length + 1);
  return null;
}

/** A comment is one line: control characters (a crafted subject) become spaces. */
function oneLine(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/[\u0000-\u001f\u007f\u2028\u2029]/g, " ");
}

export default class CertsFingerprint extends BaseCommand<typeof CertsFingerprint> {
  static override summary = "Print a certificate's SHA-256 fingerprint as a line of the server's --deny-list file.";
  static override description = `Reads each --cert (PEM) and prints one line per certificate in the deny-list format: the SHA-256 fingerprint (AA:BB:…, the one the audit log records) and a # comment with the subject and expiry. Append it to the server's --deny-list file to revoke the certificate; the server picks the change up within a second (or at once on SIGHUP), without a restart. Reads files only; connects to nothing.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --cert .qim/pki/alice.crt",
    {
      description: "Revoke alice's certificate on a running server",
      command: "<%= config.bin %> <%= command.id %> --cert .qim/pki/alice.crt >> /etc/qim/deny-list",
    },
  ];
  static override flags = {
    cert: Flags.string({ char: "c", required: true, multiple: true, description: "certificate file (PEM); repeat for several" }),
  };

  async run(): Promise<FingerprintResult> {
    const certificates = this.flags.cert.map((file): FingerprintEntry => {
      let pem: string;
      try {
        pem = readFileSync(file, "utf8");
      } catch (err) {
        throw new UsageError("--cert", `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
      }
      let cert: X509Certificate;
      try {
        cert = new X509Certificate(pem);
      } catch {
        throw new UsageError("--cert", `${file} is not a PEM certificate`);
      }
      const subject = { CN: subjectField(cert.subject, "CN"), OU: subjectField(cert.subject, "OU") };
      const notAfter = new Date(cert.validTo).toISOString();
      const who = [subject.CN !== null ? `CN=${subject.CN}` : "", subject.OU !== null ? `OU=${subject.OU}` : ""].filter(Boolean).join(", ") || "no CN/OU";
      return {
        certPath: path.resolve(file),
        fingerprint256: cert.fingerprint256,
        subject,
        notAfter,
        serialHex: cert.serialNumber.toUpperCase(),
        denyListLine: `${cert.fingerprint256}  # ${oneLine(who)}, expires ${notAfter}`,
      };
    });
    for (const c of certificates) this.log(c.denyListLine);
    return { certificates };
  }
}
