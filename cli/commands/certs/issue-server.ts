import path from "node:path";
import * as Flags from "@oclif/core/flags";
import { BaseCommand } from "../../base.js";
import { fileBase, forceFlag, pkiDirFlag, positiveDays, readCaFile, refuseExisting, writeCertificate } from "../../certs/files.js";
import type { CertificateResult } from "../../certs/results.js";
import { certificateLines, subjectText } from "../../certs/text.js";
import { UsageError } from "../../exit-codes.js";

export default class CertsIssueServer extends BaseCommand<typeof CertsIssueServer> {
  static override summary = "Issue the admin server's certificate, with the host names and IPs clients connect to.";
  static override description = `Signs a server certificate with the CA in --dir (or --ca-cert/--ca-key). Every --host becomes a subjectAltName (DNS name or IP address); the first is also the subject CN. Clients must connect with one of these names (use localhost rather than 127.0.0.1 on a development machine). Writes <name>.crt and <name>.key (mode 0600); prints subject, names, expiry and SHA-256 fingerprint.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --host localhost --host 127.0.0.1",
    "<%= config.bin %> <%= command.id %> --host qim-admin.internal --host 10.0.4.17 --dir /etc/qim/pki --days 397",
  ];
  static override flags = {
    host: Flags.string({ required: true, multiple: true, delimiter: ",", description: "DNS name or IP address of the server; repeat or separate with commas" }),
    dir: pkiDirFlag,
    name: Flags.string({ default: "server", description: "base name of the files written (<name>.crt, <name>.key)" }),
    days: Flags.integer({ default: 825, description: "validity in days" }),
    "ca-cert": Flags.string({ description: "CA certificate (default: <dir>/ca.crt)" }),
    "ca-key": Flags.string({ description: "CA private key (default: <dir>/ca.key)" }),
    force: forceFlag,
  };

  async run(): Promise<CertificateResult> {
    const days = positiveDays("--days", this.flags.days);
    const hosts = this.flags.host.map((h) => h.trim()).filter((h) => h !== "");
    if (hosts.length === 0) throw new UsageError("--host", "give at least one host name or IP address");
    const { dir } = this.flags;
    const caPem = readCaFile(this.flags["ca-cert"] ?? path.join(dir, "ca.crt"), "--ca-cert");
    const caKeyPem = readCaFile(this.flags["ca-key"] ?? path.join(dir, "ca.key"), "--ca-key");
    const certPath = path.join(dir, `${fileBase(this.flags.name)}.crt`);
    const keyPath = path.join(dir, `${fileBase(this.flags.name)}.key`);
    refuseExisting([certPath, keyPath], this.flags.force);
    const { issueServerCert } = await import("../../../certs/pki.js");
    let issued;
    try {
      issued = issueServerCert({ certPem: caPem, keyPem: caKeyPem }, { hosts, days });
    } catch (err) {
      const message = (err as Error).message;
      throw new UsageError(message.startsWith("hosts") ? "--host" : "--ca-cert", message);
    }
    const r = await writeCertificate(issued, certPath, keyPath, null, this.flags.force);
    this.log(`Issued server certificate ${subjectText(r.subject)} for ${r.sans.join(", ")}`);
    this.log(certificateLines(r));
    return r;
  }
}
