import { createPrivateKey, X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import * as Args from "@oclif/core/args";
import * as Flags from "@oclif/core/flags";
import { BaseCommand } from "../../base.js";
import { contextName, type NamedContext } from "../../context.js";
import { updateConfig } from "../../context/config.js";
import { contextEntry, type ContextSetResult } from "../../context/results.js";
import { setText } from "../../context/text.js";
import { UsageError } from "../../exit-codes.js";
import { endpoint as checkEndpoint, gatewayUrl, uuid } from "../../validate.js";

function readFile(flag: string, file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (err) {
    throw new UsageError(flag, `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
}

function readCertificate(flag: string, file: string): X509Certificate {
  try {
    return new X509Certificate(readFile(flag, file));
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(flag, `${file} is not a PEM certificate`);
  }
}

/** The context after the flags: a given value replaces, an empty one removes, an absent one keeps. */
function merged(old: NamedContext | undefined, f: { endpoint?: string | undefined; tenant?: string | undefined; gateway?: string | undefined; ca?: string | undefined; cert?: string | undefined; key?: string | undefined; insecure?: boolean | undefined }): NamedContext {
  const next: NamedContext = { ...old };
  // a context set by hand is the user's: dev up no longer takes it for its own and replaces it
  delete next.dev;
  delete next.dataDir;
  if (f.endpoint !== undefined) next.endpoint = f.endpoint === "" ? undefined : checkEndpoint("--endpoint", f.endpoint);
  if (f.tenant !== undefined) next.tenant = f.tenant === "" ? undefined : uuid("--tenant", f.tenant);
  if (f.gateway !== undefined) next.gateway = f.gateway === "" ? undefined : gatewayUrl("--gateway", f.gateway);
  for (const k of ["ca", "cert", "key"] as const) {
    const v = f[k];
    if (v !== undefined) next[k] = v === "" ? undefined : path.resolve(v);
  }
  if (f.insecure !== undefined) next.insecure = f.insecure;
  for (const k of Object.keys(next) as (keyof NamedContext)[]) if (next[k] === undefined) delete next[k];
  return next;
}

/** Everything checkable locally: the endpoint, the files given now (present, PEM), and that the key belongs to the certificate. */
function validate(next: NamedContext, f: { ca?: string | undefined; cert?: string | undefined; key?: string | undefined }): void {
  if (next.endpoint === undefined) throw new UsageError("--endpoint", "a context needs an endpoint: give --endpoint host:port");
  if (f.ca) readCertificate("--ca", next.ca!);
  if (next.cert !== undefined && next.key === undefined) throw new UsageError("--key", `the certificate ${next.cert} needs its key: give --key`);
  if (next.key !== undefined && next.cert === undefined) throw new UsageError("--cert", `the key ${next.key} needs its certificate: give --cert`);
  if ((f.cert || f.key) && next.cert !== undefined && next.key !== undefined) {
    const cert = readCertificate("--cert", next.cert);
    // the key is read to check the pair, never printed
    let key;
    try {
      key = createPrivateKey(readFile("--key", next.key));
    } catch (err) {
      if (err instanceof UsageError) throw err;
      throw new UsageError("--key", `${next.key} is not a PEM private key without a passphrase`);
    }
    if (!cert.checkPrivateKey(key)) throw new UsageError("--key", `${next.key} is not the key of the certificate ${next.cert}`);
  }
}

export default class ContextSet extends BaseCommand<typeof ContextSet> {
  static override summary = "Create or update a named context: endpoint, CA, client certificate and key, tenant.";
  static override description = `Writes the context NAME into $XDG_CONFIG_HOME/qimctl/config.json (atomically: a temporary file, mode 0600, renamed over the old one). On an existing context only the flags given change it; an empty value (--tenant "") removes that setting. Paths are stored absolute (relative ones are taken from the working directory).

Checked before anything is written: the endpoint is host:port, the tenant a UUID, the gateway wss://HOST:PORT (ws:// to loopback only), each file given exists and is PEM (--ca and --cert certificates, --key a private key), and the key belongs to the certificate; a new context needs --endpoint. The key is read only to check that; nothing prints it.

A context written by dev up that is changed here becomes yours: dev up then leaves it alone. A new context becomes the current one when no context is current; --use makes it current in any case. Re-running with the same values changes nothing, says so and exits 0.

When the config file does not exist yet and the old context file $XDG_CONFIG_HOME/qimctl/context.json does, the latter is imported first as the context "default", current.

Exit codes: 0 ok; 2 a flag is invalid (named), or the config file is not valid; 4 another qimctl holds the config file's lock.`;
  static override examples = [
    {
      description: "A production context, then use it for one command",
      command: "<%= config.bin %> <%= command.id %> prod --endpoint qim-admin.internal:7443 --ca /etc/qim/ca.crt --cert ~/.qim/alice.crt --key ~/.qim/alice.key --tenant 8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c",
    },
    "<%= config.bin %> <%= command.id %> prod --tenant 1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f --use",
    "<%= config.bin %> <%= command.id %> local --endpoint localhost:7443 --insecure --output json",
  ];
  static override args = {
    name: Args.string({ required: true, description: "the context's name: 1-64 letters, digits and . _ @ -" }),
  };
  static override flags = {
    endpoint: Flags.string({ description: "admin API host:port" }),
    ca: Flags.string({ description: "CA certificate (PEM) the server certificate must chain to" }),
    cert: Flags.string({ description: "client certificate (PEM): its CN is who you are, its OU your role" }),
    key: Flags.string({ description: "the client certificate's private key (PEM)" }),
    tenant: Flags.string({ description: "tenant UUID" }),
    gateway: Flags.string({ description: "the client gateway devices connect to, wss://HOST:PORT (qimctl client's default --url)" }),
    insecure: Flags.boolean({ allowNo: true, description: "plaintext, for a server started with --insecure-dev (development only); --no-insecure turns it off" }),
    use: Flags.boolean({ description: "make it the current context" }),
  };

  async run(): Promise<ContextSetResult> {
    const { args } = await this.parse(ContextSet);
    const name = contextName("NAME", args.name);
    const f = this.flags;
    const given = { endpoint: f.endpoint, tenant: f.tenant, gateway: f.gateway, ca: f.ca, cert: f.cert, key: f.key, insecure: f.insecure };
    // the flags alone, before the lock: a bad value is refused even when the config file is busy
    merged(undefined, given);
    const change = updateConfig(process.env, os.homedir(), (cfg) => {
      const old = Object.hasOwn(cfg.contexts, name) ? cfg.contexts[name] : undefined;
      const next = merged(old, given);
      validate(next, given);
      cfg.contexts[name] = next;
      if (f.use || cfg.current === null) cfg.current = name;
      return { created: old === undefined, context: contextEntry(name, next, cfg.current, "/") };
    });
    const result: ContextSetResult = { config: change.config, name, created: change.result.created, changed: change.written, context: change.result.context, imported: change.imported };
    this.log(setText(result));
    return result;
  }
}
