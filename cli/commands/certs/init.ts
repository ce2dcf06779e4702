import path from "node:path";
import * as Flags from "@oclif/core/flags";
import { BaseCommand } from "../../base.js";
import { forceFlag, pkiDirFlag, positiveDays, refuseExisting, writeCertificate } from "../../certs/files.js";
import type { CertificateResult } from "../../certs/results.js";
import { certificateLines, subjectText } from "../../certs/text.js";

export default class CertsInit extends BaseCommand<typeof CertsInit> {
  static override summary = "Create a certificate authority for the admin API.";
  static override description = `Writes ca.crt and ca.key (mode 0600) into --dir. The server trusts client certificates signed by this CA (qim-admin-server --tls-ca), and clients check the server certificate against it (qimctl --ca). Keep ca.key off the machines that only run qimctl.

Prints the subject, expiry and SHA-256 fingerprint. Existing files are never replaced unless --force (exit 4 otherwise).`;
  static override examples = [
    "<%= config.bin %> <%= command.id %>",
    "<%= config.bin %> <%= command.id %> --dir /etc/qim/pki --days 3650 --name 'ACME QIM CA'",
  ];
  static override flags = {
    dir: pkiDirFlag,
    days: Flags.integer({ default: 3650, description: "validity in days" }),
    name: Flags.string({ default: "qimctl CA", description: "the CA's subject CN" }),
    force: forceFlag,
  };

  async run(): Promise<CertificateResult> {
    const days = positiveDays("--days", this.flags.days);
    const certPath = path.join(this.flags.dir, "ca.crt");
    const keyPath = path.join(this.flags.dir, "ca.key");
    refuseExisting([certPath, keyPath], this.flags.force);
    const { createCa } = await import("../../../certs/pki.js");
    const ca = createCa({ commonName: this.flags.name, days });
    const r = await writeCertificate(ca, certPath, keyPath, null, this.flags.force);
    this.log(`Created CA ${subjectText(r.subject)}`);
    this.log(certificateLines(r));
    return r;
  }
}
