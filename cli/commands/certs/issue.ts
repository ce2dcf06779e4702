import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import * as Flags from "@oclif/core/flags";
import { BaseCommand } from "../../base.js";
import { fileBase, forceFlag, pkiDirFlag, positiveDays, readCaFile, refuseExisting, writeCertificate } from "../../certs/files.js";
import type { IssueResult } from "../../certs/results.js";
import { certificateLines, subjectText } from "../../certs/text.js";
import { defaultContextPath, ENV, type ContextFile } from "../../context.js";
import { UsageError } from "../../exit-codes.js";
import { endpoint as checkEndpoint, uuid } from "../../validate.js";

const ROLES = ["admin", "operator", "viewer", "drill"] as const;

export default class CertsIssue extends BaseCommand<typeof CertsIssue> {
  static override summary = "Issue a client certificate: who you are (CN) and your role (OU).";
  static override description = `Signs a client certificate with the CA in --dir (or --ca-cert/--ca-key). The admin API reads the principal from it: subject CN = --name, OU = --role. Roles: admin (everything), operator (groups and membership changes, audit), viewer (read only), drill (read, and send messages as a user). Writes <name>.crt and <name>.key (mode 0600); prints subject, role, expiry and SHA-256 fingerprint (the audit log records the same fingerprint).

--write-context also writes a qimctl context file (default $XDG_CONFIG_HOME/qimctl/context.json, or --context) pointing at the CA, this certificate and key, with --endpoint and --tenant, so that the next qimctl command just works.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --name alice --role operator",
    {
      description: "A viewer certificate valid for 30 days, and a context file that uses it",
      command: "<%= config.bin %> <%= command.id %> --name dash --role viewer --days 30 --write-context --endpoint localhost:7443 --tenant 8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c",
    },
  ];
  static override flags = {
    name: Flags.string({ char: "n", required: true, description: "the principal's name (subject CN), e.g. alice or ci-bot" }),
    role: Flags.option({ char: "r", options: ROLES, required: true, description: "the role (subject OU)" })(),
    days: Flags.integer({ default: 365, description: "validity in days" }),
    dir: pkiDirFlag,
    "ca-cert": Flags.string({ description: "CA certificate (default: <dir>/ca.crt)" }),
    "ca-key": Flags.string({ description: "CA private key (default: <dir>/ca.key)" }),
    force: forceFlag,
    "write-context": Flags.boolean({ description: "write a qimctl context file pointing at the CA, this certificate and key" }),
    context: Flags.string({ description: "where --write-context writes (default $XDG_CONFIG_HOME/qimctl/context.json) [env QIMCTL_CONTEXT]" }),
    endpoint: Flags.string({ default: "localhost:7443", description: "the endpoint --write-context records" }),
    tenant: Flags.string({ description: "the tenant UUID --write-context records" }),
  };

  async run(): Promise<IssueResult> {
    const days = positiveDays("--days", this.flags.days);
    const { dir, name, role } = this.flags;
    const tenant = this.flags.tenant === undefined ? undefined : uuid("--tenant", this.flags.tenant);
    const endpoint = checkEndpoint("--endpoint", this.flags.endpoint);
    const caPath = this.flags["ca-cert"] ?? path.join(dir, "ca.crt");
    const caPem = readCaFile(caPath, "--ca-cert");
    const caKeyPem = readCaFile(this.flags["ca-key"] ?? path.join(dir, "ca.key"), "--ca-key");
    const certPath = path.join(dir, `${fileBase(name)}.crt`);
    const keyPath = path.join(dir, `${fileBase(name)}.key`);
    refuseExisting([certPath, keyPath], this.flags.force);
    const { issueClientCert } = await import("../../../certs/pki.js");
    let issued;
    try {
      issued = issueClientCert({ certPem: caPem, keyPem: caKeyPem }, { name, role, days });
    } catch (err) {
      const message = (err as Error).message;
      throw new UsageError(message.startsWith("name") ? "--name" : message.startsWith("ca") ? "--ca-cert" : "--role", message);
    }
    const cert = await writeCertificate(issued, certPath, keyPath, role, this.flags.force);

    let contextPath: string | null = null;
    if (this.flags["write-context"]) {
      contextPath = path.resolve(this.flags.context ?? process.env[ENV.context] ?? defaultContextPath(process.env, os.homedir()));
      const ctx: ContextFile = { endpoint, ca: path.resolve(caPath), cert: cert.certPath, key: cert.keyPath, ...(tenant ? { tenant } : {}), insecure: false };
      mkdirSync(path.dirname(contextPath), { recursive: true });
      writeFileSync(contextPath, `${JSON.stringify(ctx, null, 2)}\n`, { mode: 0o600 });
    } else if (this.flags.tenant !== undefined || this.flags.context !== undefined) {
      this.note("note: --tenant and --context only matter with --write-context");
    }

    this.log(`Issued client certificate ${subjectText(cert.subject)} (role ${role})`);
    this.log(certificateLines(cert, (contextPath ? [["context", `${contextPath} (endpoint ${endpoint}${tenant ? `, tenant ${tenant}` : ", no tenant: give --tenant or QIMCTL_TENANT"})`] as const] : [])));
    return { ...cert, caPath: path.resolve(caPath), contextPath };
  }
}
