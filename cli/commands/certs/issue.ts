import { existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import * as Flags from "@oclif/core/flags";
import { BaseCommand } from "../../base.js";
import { DEFAULT_PKI_DIR, devPkiDirs, fileBase, forceFlag, pkiDirFlag, shellWord, positiveDays, readCaFile, refuseExisting, writeCertificate } from "../../certs/files.js";
import type { IssueResult } from "../../certs/results.js";
import { certificateLines, subjectText } from "../../certs/text.js";
import { contextName, defaultConfigPath, ENV, isContextPath, type ContextFile } from "../../context.js";
import { readConfig, updateConfig, writeAtomically } from "../../context/config.js";
import { UsageError } from "../../exit-codes.js";
import { endpoint as checkEndpoint, uuid } from "../../validate.js";

const ROLES = ["admin", "operator", "viewer", "drill", "node", "service"] as const;
/** The SANs of a node certificate when no --host is given: a node on this machine (dev up --nodes N). */
const DEFAULT_NODE_HOSTS = ["localhost", "127.0.0.1"] as const;

export default class CertsIssue extends BaseCommand<typeof CertsIssue> {
  static override summary = "Issue a client certificate (who you are: CN, your role: OU), or a node certificate (--role node).";
  static override description = `Signs a client certificate with the CA in --dir (or --ca-cert/--ca-key). The admin API reads the principal from it: subject CN = --name, OU = --role. Roles: admin (everything), operator (groups and membership changes, audit), viewer (read only), drill (read, and send messages as a user). Writes <name>.crt and <name>.key (mode 0600); prints subject, role, expiry and SHA-256 fingerprint (the audit log records the same fingerprint).

--role node issues a node certificate instead: an engine server's identity towards the other nodes of its cluster (node-to-node RPC, docs/operator-guide.md "Cluster"). CN = --name (the node id), OU = node, usable as a server AND a client certificate (extKeyUsage serverAuth and clientAuth), with every --host (default localhost, 127.0.0.1) as a subjectAltName: the addresses peers reach its node.listen on. A node certificate may call only the node service, never an admin RPC; give it to the server as node.tls.cert/node.tls.key.

--role service issues a client certificate (OU = service) for an application server that calls the CMD sync HTTP API (POST /message/sync and /message/syncack on sync.listen, docs/cmd-sync.md). It may call only that API, never an admin RPC, and no operator certificate may call that API.

A dev stack (qimctl dev up) has its own CA in <data-dir>/pki, the only one its server trusts: issue with --dir <data-dir>/pki. When --dir is left at its default and holds no CA while a dev stack's CA exists (a context dev up wrote, or .qim/dev, .qim/demo here), the command refuses (exit 2) with the exact command to run instead of suggesting certs init.

--write-context also writes a qimctl context pointing at the CA, this certificate and key, with --endpoint and --tenant, so that the next qimctl command just works: the named context --name (or --context NAME) in $XDG_CONFIG_HOME/qimctl/config.json, made the current context (see qimctl context list); or, when --context is a path (it has a / or ends in .json), a context file there.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --name alice --role operator",
    {
      description: "A viewer certificate valid for 30 days, and the current context \"dash\" that uses it",
      command: "<%= config.bin %> <%= command.id %> --name dash --role viewer --days 30 --write-context --endpoint localhost:7443 --tenant 8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c",
    },
    {
      description: "A node certificate for node-2, reached by its peers at qim-2.internal or 10.0.4.18",
      command: "<%= config.bin %> <%= command.id %> --role node --name node-2 --host qim-2.internal --host 10.0.4.18",
    },
    {
      description: "A certificate for the application server \"app-1\" that calls /message/sync and /message/syncack",
      command: "<%= config.bin %> <%= command.id %> --role service --name app-1",
    },
  ];
  static override flags = {
    name: Flags.string({ char: "n", required: true, description: "the principal's name (subject CN), e.g. alice or ci-bot" }),
    role: Flags.option({ char: "r", options: ROLES, required: true, description: "the role (subject OU); node: a node certificate (server and client) for node-to-node RPC; service: an application server's certificate for the CMD sync HTTP API" })(),
    host: Flags.string({ multiple: true, delimiter: ",", description: `--role node only: DNS name or IP address peers reach the node at (its subjectAltName); repeat or separate with commas (default ${DEFAULT_NODE_HOSTS.join(",")})` }),
    days: Flags.integer({ default: 365, description: "validity in days" }),
    dir: pkiDirFlag,
    "ca-cert": Flags.string({ description: "CA certificate (default: <dir>/ca.crt)" }),
    "ca-key": Flags.string({ description: "CA private key (default: <dir>/ca.key)" }),
    force: forceFlag,
    "write-context": Flags.boolean({ description: "write a qimctl context file pointing at the CA, this certificate and key" }),
    context: Flags.string({ description: "where --write-context writes: a context name (default --name) or a context file path (with a / or ending in .json) [env QIMCTL_CONTEXT]" }),
    endpoint: Flags.string({ default: "localhost:7443", description: "the endpoint --write-context records" }),
    tenant: Flags.string({ description: "the tenant UUID --write-context records" }),
  };

  async run(): Promise<IssueResult> {
    const days = positiveDays("--days", this.flags.days);
    const { dir, name, role } = this.flags;
    if (role !== "node" && this.flags.host !== undefined) throw new UsageError("--host", "--host names a node certificate's addresses: it needs --role node (a client certificate has no subjectAltName)");
    if (role === "node" && this.flags["write-context"]) throw new UsageError("--write-context", "a node certificate cannot call the admin API, so a context with it would not work: issue an operator certificate for the CLI");
    if (role === "service" && this.flags["write-context"]) throw new UsageError("--write-context", "a service certificate calls only the CMD sync HTTP API, not the admin API, so a context with it would not work: issue an operator certificate for the CLI");
    const hosts = role === "node" ? (this.flags.host ?? [...DEFAULT_NODE_HOSTS]).map((h) => h.trim()).filter((h) => h !== "") : [];
    if (role === "node" && hosts.length === 0) throw new UsageError("--host", "give at least one host name or IP address");
    const tenant = this.flags.tenant === undefined ? undefined : uuid("--tenant", this.flags.tenant);
    const endpoint = checkEndpoint("--endpoint", this.flags.endpoint);
    const caPath = this.flags["ca-cert"] ?? path.join(dir, "ca.crt");
    if (this.flags["ca-cert"] === undefined && this.flags["ca-key"] === undefined && dir === DEFAULT_PKI_DIR && !existsSync(caPath)) this.pointAtDevCa(caPath);
    const caPem = readCaFile(caPath, "--ca-cert");
    const caKeyPem = readCaFile(this.flags["ca-key"] ?? path.join(dir, "ca.key"), "--ca-key");
    const certPath = path.join(dir, `${fileBase(name)}.crt`);
    const keyPath = path.join(dir, `${fileBase(name)}.key`);
    // where the context goes, checked before anything is written
    const target = this.flags["write-context"] ? contextTarget(this.flags.context, name) : undefined;
    refuseExisting([certPath, keyPath], this.flags.force);
    const { issueClientCert, issueNodeCert } = await import("../../../certs/pki.js");
    let issued;
    try {
      const ca = { certPem: caPem, keyPem: caKeyPem };
      issued = role === "node" ? issueNodeCert(ca, { nodeId: name, hosts, days }) : issueClientCert(ca, { name, role, days });
    } catch (err) {
      const message = (err as Error).message;
      throw new UsageError(/^(name|nodeId)/.test(message) ? "--name" : message.startsWith("ca") ? "--ca-cert" : message.startsWith("hosts") ? "--host" : "--role", message);
    }
    const cert = await writeCertificate(issued, certPath, keyPath, role, this.flags.force);

    let contextPath: string | null = null;
    let writtenName: string | null = null;
    if (target) {
      const ctx: ContextFile = { endpoint, ca: path.resolve(caPath), cert: cert.certPath, key: cert.keyPath, ...(tenant ? { tenant } : {}), insecure: false };
      if ("file" in target) {
        contextPath = target.file;
        writeAtomically(contextPath, `${JSON.stringify(ctx, null, 2)}\n`);
      } else {
        const change = updateConfig(process.env, os.homedir(), (cfg) => {
          cfg.contexts[target.name] = ctx;
          cfg.current = target.name;
        });
        if (change.imported) this.note(`note: imported ${change.imported.from} as the context "${change.imported.name}" (it is no longer read)`);
        contextPath = change.config;
        writtenName = target.name;
      }
    } else if (this.flags.tenant !== undefined || this.flags.context !== undefined) {
      this.note("note: --tenant and --context only matter with --write-context");
    }

    this.log(role === "node" ? `Issued node certificate ${subjectText(cert.subject)} for ${cert.sans.join(", ")} (server and client)` : `Issued client certificate ${subjectText(cert.subject)} (role ${role})`);
    const where = writtenName ? `"${writtenName}" in ${contextPath}, now the current context` : contextPath;
    this.log(certificateLines(cert, (contextPath ? [["context", `${where} (endpoint ${endpoint}${tenant ? `, tenant ${tenant}` : ", no tenant: give --tenant or QIMCTL_TENANT"})`] as const] : [])));
    return { ...cert, caPath: path.resolve(caPath), contextPath, contextName: writtenName };
  }

  /** Throws the refusal that names the dev stacks' CAs, when there are any (else returns: the usual "cannot read" follows). */
  private pointAtDevCa(caPath: string): void {
    const commands = devCaCommands(this.argv, process.env, process.cwd());
    if (commands.length === 0) return;
    throw new UsageError("--dir", `no CA in ${path.resolve(path.dirname(caPath))} (the default --dir); a dev stack's certificates must come from its own CA${commands.length > 1 ? " — one of these" : ""}: ${commands.join("  |  ")}`);
  }
}

/**
 * No CA in the default dir, but a dev stack's CA on this machine (dev up made one in its data
 * dir): the dev stack's server trusts only that one, so `certs init` would be the wrong advice.
 * Refuses with the exact command that uses it (exit 2, nothing written).
 */
function devCaCommands(argv: readonly string[], env: NodeJS.ProcessEnv, cwd: string): string[] {
  let contexts = {};
  try {
    contexts = readConfig(defaultConfigPath(env, os.homedir()))?.contexts ?? {};
  } catch {
    // an unreadable config file: the default data dirs are still looked at
  }
  return devPkiDirs(contexts, cwd).map((pki) => ["qimctl", "certs", "issue", ...argv, "--dir", pki].map(shellWord).join(" "));
}

/** Where --write-context writes: --context (else QIMCTL_CONTEXT) as a file or a name, else the context named after the certificate. */
function contextTarget(flag: string | undefined, certName: string): { file: string } | { name: string } {
  const given = flag !== undefined ? { value: flag, field: "--context" } : process.env[ENV.context] ? { value: process.env[ENV.context]!, field: ENV.context } : undefined;
  if (given && isContextPath(given.value)) return { file: path.resolve(given.value) };
  if (given) return { name: contextName(given.field, given.value) };
  try {
    return { name: contextName("--name", certName) };
  } catch {
    throw new UsageError("--context", `--name ${JSON.stringify(certName)} is not a context name: give --context NAME (letters, digits and . _ @ -) for the context --write-context writes`);
  }
}
