import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import path from "node:path";
import * as Flags from "@oclif/core/flags";
import { NOT_ONE_LINE } from "../../../core/base/index.js";
import { BaseCommand } from "../../base.js";
import type { FingerprintEntry, FingerprintResult } from "../../certs/results.js";
import { subjectText } from "../../certs/text.js";
import { subjectField } from "../../certs/x509.js";
import { UsageError } from "../../exit-codes.js";

const NOT_ONE_LINE_ALL = new RegExp(NOT_ONE_LINE.source, "gu");

/**
 * A comment is one line that shows what it holds: the characters core/text.ts refuses in a
 * one-line text (C0 and C1 controls, line separators, bidirectional formatting: a crafted subject)
 * become spaces.
 */
function oneLine(text: string): string {
  return text.replace(NOT_ONE_LINE_ALL, " ");
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
      // Node's X509Certificate rather than certificateInfo (certs/pki.ts): node-forge reads RSA keys
      // only, and a certificate to revoke may come from any CA the server trusts (an EC one too)
      let cert: X509Certificate;
      try {
        cert = new X509Certificate(pem);
      } catch {
        throw new UsageError("--cert", `${file} is not a PEM certificate`);
      }
      const subject = { CN: subjectField(cert, "CN"), OU: subjectField(cert, "OU") };
      const notAfter = new Date(cert.validTo).toISOString();
      const who = subjectText(subject) || "no CN/OU";
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
