/**
 * The base of every qimctl command (STYLE "The CLI"): output flags and the single catch() that
 * turns any failure into a message and an exit code (cli/exit-codes.ts); ConnectedCommand adds
 * the connection flags and the admin API client. `run()` returns a typed result; with
 * `--output json` (or `--json`) that result is printed verbatim, and failures are printed as
 * `{ "error": { code, exitCode, message, field? } }` on stderr. Data goes to stdout, diagnostics
 * to stderr.
 *
 * grpc-js is imported lazily, when a command connects, so that --help and local failures stay
 * fast (TOOLCHAIN: startup cost).
 */
import { createPrivateKey, X509Certificate, type KeyObject } from "node:crypto";
import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import os from "node:os";
// oclif's entry points one by one, not its index: the index loads all of oclif (semver's 47
// modules among them), which a command start-up does not need (bench/startup.ts)
import type { Config, Interfaces } from "@oclif/core";
import { Command } from "@oclif/core/command";
import { ExitError } from "@oclif/core/errors";
import * as Flags from "@oclif/core/flags";
import type { AdminClient, WatchStream } from "../admin-api/client.js";
import { confirmOrStop, mustConfirm, type Destructive } from "./confirm.js";
import { resolveConnection, type Resolved, type ResolvedConnection } from "./context.js";
import { classifyError, fileSystemReason, GRPC_STATUS, InterruptedError, needsCertificateProbe, UsageError, type Failure, type FailureContext } from "./exit-codes.js";
import { visibleLines } from "./format.js";
import { endpoint as checkEndpoint, seconds, uuid } from "./validate.js";

export type OutputMode = "table" | "json";

/** The output mode from raw argv: known before parsing, so that parse errors honour it too. */
export function outputModeFromArgv(argv: readonly string[]): OutputMode {
  let mode: OutputMode = "table";
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--") break;
    if (a === "--json") mode = "json";
    else if (a === "--output" || a === "-o") mode = argv[i + 1] === "json" ? "json" : argv[i + 1] === "table" ? "table" : mode;
    else if (a.startsWith("--output=")) mode = a.slice(9) === "json" ? "json" : a.slice(9) === "table" ? "table" : mode;
    else if (a.startsWith("-o") && a.length > 2) mode = a.slice(2).replace(/^=/, "") === "json" ? "json" : mode;
  }
  return mode;
}

export const outputFlags = {
  output: Flags.option({
    char: "o",
    options: ["table", "json"] as const,
    default: "table" as const,
    helpGroup: "OUTPUT",
    description: "table for people; json prints the result object verbatim (stable, documented), errors as JSON on stderr",
  })(),
  json: Flags.boolean({ helpGroup: "OUTPUT", description: "same as --output json" }),
};

export const connectionFlags = {
  ...outputFlags,
  endpoint: Flags.string({ helpGroup: "CONNECTION", description: "admin API host:port [env QIMCTL_ENDPOINT]" }),
  ca: Flags.string({ helpGroup: "CONNECTION", description: "CA certificate (PEM) the server certificate must chain to [env QIMCTL_CA]" }),
  cert: Flags.string({ helpGroup: "CONNECTION", description: "client certificate (PEM); its CN is who you are, its OU your role [env QIMCTL_CERT]" }),
  key: Flags.string({ helpGroup: "CONNECTION", description: "client private key (PEM) [env QIMCTL_KEY]" }),
  tenant: Flags.string({ helpGroup: "CONNECTION", description: "tenant UUID [env QIMCTL_TENANT]" }),
  insecure: Flags.boolean({ helpGroup: "CONNECTION", description: "plaintext, for a server started with --insecure-dev (development only)" }),
  context: Flags.string({ helpGroup: "CONNECTION", description: "a named context (qimctl context list), or a context file: a path with a / or ending in .json (JSON: endpoint, ca, cert, key, tenant, insecure) [env QIMCTL_CONTEXT; default: the current context]" }),
  timeout: Flags.string({ helpGroup: "CONNECTION", description: "seconds to wait for each answer", default: "15" }),
};

type FlagsOf<B, T extends typeof Command> = Interfaces.InferredFlags<B & T["flags"]>;

export abstract class BaseCommand<T extends typeof Command> extends Command {
  static override baseFlags = outputFlags;
  static override enableJsonFlag = false;
  /** Set by destructive and bulk commands: the --yes rule of cli/confirm.ts applies to them. */
  declare static destructive?: Destructive;

  protected flags!: FlagsOf<typeof outputFlags, T>;
  protected readonly outputMode: OutputMode;
  /** What the catch() knows about the connection, for messages such as "cannot reach …". */
  protected failureContext: FailureContext = {};
  /** The TLS material of the connection, for the refusal probe after an ambiguous UNAVAILABLE. */
  protected probeTls: { caPem?: string; certPem: string; keyPem: string } | undefined;
  /** A destructive invocation on a terminal without --yes: askFirst() asks before it changes anything. */
  private confirmationNeeded = false;

  constructor(argv: string[], config: Config) {
    super(argv, config);
    this.outputMode = outputModeFromArgv(argv);
  }

  override async init(): Promise<void> {
    await super.init();
    const { flags } = await this.parse({
      flags: this.ctor.flags,
      baseFlags: (this.ctor as unknown as typeof BaseCommand).baseFlags,
      args: this.ctor.args,
      strict: this.ctor.strict,
    });
    this.flags = flags as typeof this.flags;
    this.checkFlags(flags);
    // before run(): without a terminal and without --yes, a destructive command stops here (exit 2)
    this.confirmationNeeded = mustConfirm((this.ctor as unknown as typeof BaseCommand).destructive, flags, process.stdin.isTTY === true);
  }

  /**
   * A command's own check of its flags where oclif's parser cannot say it (--user or --from-file):
   * run right after parsing, so that bad input is refused before the --yes rule.
   */
  protected checkFlags(_flags: Readonly<Record<string, unknown>>): void {}

  /**
   * The confirmation of a destructive command (cli/confirm.ts), asked once everything that can be
   * checked locally has been: nothing with --yes or --dry-run; a no throws (exit 130). A function
   * runs only when there is a question to ask (e.g. it fetches the plan to show), and may find
   * there is none (undefined: nothing would change).
   */
  protected async askFirst(question: string | (() => Promise<string | undefined>)): Promise<void> {
    if (!this.confirmationNeeded) return;
    const text = typeof question === "string" ? question : await question();
    if (text !== undefined) await confirmOrStop(text);
  }

  override jsonEnabled(): boolean {
    return this.outputMode === "json";
  }

  /** Set by a command that prints JSON lines (a stream): its result is then one line too. */
  protected jsonLines = false;

  /**
   * Table-mode output, control and bidirectional formatting characters escaped (cli/format.ts
   * visibleLines): every table cell already is; this covers the sentences around them, so that no
   * text a user chose reaches the operator's terminal as a command to it.
   */
  override log(message = "", ...args: unknown[]): void {
    super.log(visibleLines(message), ...args);
  }

  /** Plain, stable JSON (no colours), whatever the terminal. */
  override logJson(json: unknown): void {
    if (this.streamed) return;
    process.stdout.write(`${this.jsonLines ? JSON.stringify(json) : JSON.stringify(json, null, 2)}\n`);
  }

  /**
   * Prints what an endless stream sends (audit tail --follow, sessions watch) until it ends: each
   * event's lines, one JSON object per line with --output json. A reader that went away
   * (`| head -n 3`) ends it quietly with exit 0; the stream's error is the command's (Ctrl+C:
   * exit 130 through the usual path).
   */
  protected async printStream<E, L>(open: (onEvent: (event: E) => void) => WatchStream, linesOf: (event: E) => L[], text: (line: L) => string): Promise<never> {
    const json = this.jsonEnabled();
    await new Promise<void>((resolve, reject) => {
      const stream = open((event) => {
        for (const line of linesOf(event)) process.stdout.write(`${json ? JSON.stringify(line) : visibleLines(text(line))}\n`);
      });
      process.stdout.once("error", (err: NodeJS.ErrnoException) => {
        stream.cancel();
        if (err.code === "EPIPE") resolve();
        else reject(err);
      });
      stream.ended.then(resolve, reject);
    });
    // the stream ended without an error (a reader that went away): exit 0 with nothing more to print
    this.exit(0);
  }

  /** Set by a command that printed its result as it went (streamList): nothing is printed at the end. */
  private streamed = false;

  /**
   * Prints a paged listing as its pages arrive and keeps none of it (`--all` of a list whose whole
   * may not fit in memory: a million-member group). JSON: one document of the same shape as a
   * single page's result, written piece by piece, `{ ...head, "<key>": [ one item per line ],
   * ...tail }` (tail: from the last page); table: `text.head` of the first page, a row per item,
   * `text.tail`. A reader that went away (`| head`) ends it quietly with exit 0. Returns how many
   * items it printed.
   */
  protected async streamList<P, I>(pages: AsyncIterable<P>, o: {
    itemsOf: (page: P) => readonly I[];
    head: Record<string, unknown>;
    key: string;
    tail: (last: P | undefined) => Record<string, unknown>;
    text: { head: (first: P) => string; row: (item: I) => string };
  }): Promise<number> {
    this.streamed = true;
    const json = this.jsonEnabled();
    let gone = false;
    let full = false;
    const out = (text: string) => { if (!gone && !process.stdout.write(text)) full = true; };
    let failure: Error | undefined;
    const onError = (err: NodeJS.ErrnoException) => { gone = true; if (err.code !== "EPIPE") failure = err; };
    process.stdout.on("error", onError);
    const inner = (o2: Record<string, unknown>) => JSON.stringify(o2).slice(1, -1);
    let n = 0;
    let last: P | undefined;
    if (json) out(`{${inner(o.head)}${Object.keys(o.head).length > 0 ? "," : ""}\n${JSON.stringify(o.key)}:[`);
    for await (const page of pages) {
      if (last === undefined && !json) out(`${visibleLines(o.text.head(page))}\n`);
      last = page;
      for (const item of o.itemsOf(page)) {
        out(json ? `${n === 0 ? "\n" : ",\n"}${JSON.stringify(item)}` : `${visibleLines(o.text.row(item))}\n`);
        n++;
      }
      if (gone) break;
      // a reader slower than the pages (stdout is asynchronous on some platforms): wait before the next page
      if (full) await new Promise<void>((resolve) => { process.stdout.once("drain", resolve); process.stdout.once("error", () => resolve()); });
      full = false;
    }
    const tail = inner(o.tail(last));
    if (json) out(`${n === 0 ? "" : "\n"}]${tail === "" ? "" : `,\n${tail}`}}\n`);
    // a write that failed after the loop (EPIPE) reports asynchronously: let it land before the listener goes
    await new Promise<void>((resolve) => setImmediate(resolve));
    process.stdout.off("error", onError);
    if (failure) throw failure;
    return n;
  }

  /** A diagnostic line on stderr (table mode only: JSON mode keeps stderr for the error object). */
  protected note(line: string): void {
    if (!this.jsonEnabled()) process.stderr.write(`${visibleLines(line)}\n`);
  }

  /** The single place where a failure becomes output and an exit code. */
  override async catch(err: Error & { exitCode?: number }): Promise<never> {
    if (err instanceof ExitError) throw err;
    const failure = await this.failureOf(err);
    this.printFailure(failure);
    if (failure.exitCode === 1 && process.env.DEBUG) process.stderr.write(`${err.stack ?? ""}\n`);
    throw new ExitError(failure.exitCode);
  }

  /** What a failure prints and exits with (classifyError, after the certificate probe when it is ambiguous). */
  protected async failureOf(err: unknown): Promise<Failure> {
    // a command that already probed for this failure (the dashboard, before deciding not to retry) is not probed twice
    if (this.failureContext.certificateRefused === undefined) {
      const refused = await this.probeCertificateRefusal(err);
      if (refused !== undefined) this.failureContext.certificateRefused = refused;
    }
    return classifyError(err, this.failureContext);
  }

  /**
   * Settles an ambiguous UNAVAILABLE ("Failed to connect", a reset: cli/exit-codes.ts
   * needsCertificateProbe) with one TLS handshake (cli/tls-probe.ts): whether the server refuses
   * our certificate. Undefined when the failure is not ambiguous or there is no certificate.
   */
  protected async probeCertificateRefusal(err: unknown): Promise<boolean | undefined> {
    const e = err as { code?: unknown; details?: unknown } | null;
    const details = e?.code === GRPC_STATUS.UNAVAILABLE ? String(e.details ?? "") : "";
    if (!details || !this.probeTls || !needsCertificateProbe(details, this.failureContext)) return undefined;
    const { serverRefusesCertificate } = await import("./tls-probe.js");
    return serverRefusesCertificate(this.failureContext.endpoint!, this.probeTls);
  }

  /**
   * A result that is also a refused precondition (`dispatch audit` with a partition not OK, a drill
   * with differences): the result goes to stdout as usual (table mode prints it before calling
   * this), the failure to stderr, and the command exits with `failure.exitCode`.
   */
  protected failWithResult(result: unknown, failure: Failure): never {
    if (this.jsonEnabled()) this.logJson(result);
    this.printFailure(failure);
    throw new ExitError(failure.exitCode);
  }

  protected printFailure(f: Failure): void {
    if (this.jsonEnabled()) {
      const error = { code: f.code, exitCode: f.exitCode, message: f.message, ...(f.field ? { field: f.field } : {}) };
      process.stderr.write(`${JSON.stringify({ error }, null, 2)}\n`);
      return;
    }
    const field = f.field && !f.message.startsWith(`${f.field}:`) ? ` (field ${f.field})` : "";
    process.stderr.write(`${visibleLines(`Error: ${f.message}${field}`)}\n`);
    for (const hint of f.hints ?? []) process.stderr.write(`${visibleLines(`  hint: ${hint}`)}\n`);
  }
}

/** The connection a command talks over. */
export interface Connection {
  client: AdminClient;
  endpoint: string;
}

function fromOrigin(setting: Resolved<string>): string {
  return setting.source === "flag" ? "" : ` (from ${setting.origin})`;
}

function readPem(setting: Resolved<string>, flag: string): string {
  try {
    return readFileSync(setting.value, "utf8");
  } catch (err) {
    const why = fileSystemReason(err) ?? (err as NodeJS.ErrnoException).code ?? (err as Error).message;
    throw new UsageError(flag, `cannot read ${setting.value}${fromOrigin(setting)}: ${why}`);
  }
}

/**
 * The client certificate and its key, checked locally (STYLE: validate before connecting): a key
 * that is not a private key, or not the certificate's, otherwise surfaces as OpenSSL's raw text
 * with exit 1, or as a TLS failure that looks like the server's refusal.
 */
function checkKeyPair(cert: Resolved<string>, certPem: string, key: Resolved<string>, keyPem: string): void {
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(certPem);
  } catch (err) {
    throw new UsageError("--cert", `${cert.value}${fromOrigin(cert)} is not a PEM certificate: ${(err as Error).message}`);
  }
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(keyPem);
  } catch (err) {
    throw new UsageError("--key", `${key.value}${fromOrigin(key)} is not an unencrypted PEM private key: ${(err as Error).message}`);
  }
  if (!x509.checkPrivateKey(privateKey)) {
    throw new UsageError("--key", `${key.value}${fromOrigin(key)} is not the key of the certificate ${cert.value}${fromOrigin(cert)}: give the key the certificate was issued for`);
  }
}

/** Runs a check of a resolved setting; a refusal says where the value came from when not a flag. */
function fromSetting<R>(setting: Resolved<string>, check: () => R): R {
  try {
    return check();
  } catch (err) {
    if (err instanceof UsageError && setting.source !== "flag") throw new UsageError(err.field, `${err.message.slice(err.field.length + 2)} (from ${setting.origin})`);
    throw err;
  }
}

export abstract class ConnectedCommand<T extends typeof Command> extends BaseCommand<T> {
  static override baseFlags = connectionFlags;

  declare protected flags: FlagsOf<typeof connectionFlags, T>;
  private resolved: ResolvedConnection | undefined;
  private client: AdminClient | undefined;

  /** Ctrl+C while waiting for the server: a clean message and 130, never a stack trace. */
  private readonly exitOnInterrupt = (): void => {
    this.printFailure(classifyError(new InterruptedError("interrupted"), this.failureContext));
    this.client?.close();
    process.exit(130);
  };

  override async init(): Promise<void> {
    await super.init();
    process.once("SIGINT", this.exitOnInterrupt);
  }

  /**
   * For a command that makes a sequence of calls (`membership add --from-file`): from here on the
   * first Ctrl+C does not end the process but sets `requested`, and the command stops between two
   * calls, never in the middle of one; `onFirst` says so. A second Ctrl+C ends it at once as usual.
   */
  protected deferInterrupts(onFirst?: () => void): { readonly requested: boolean } {
    const state = { requested: false };
    process.removeListener("SIGINT", this.exitOnInterrupt);
    process.once("SIGINT", () => {
      state.requested = true;
      process.once("SIGINT", this.exitOnInterrupt);
      onFirst?.();
    });
    return state;
  }

  /** flags > QIMCTL_* > context file (cli/context.ts); local, no connection. */
  protected connectionSettings(): ResolvedConnection {
    this.resolved ??= resolveConnection({
      flags: this.flags,
      env: process.env,
      home: os.homedir(),
      readText: (file) => {
        try {
          return readFileSync(file, "utf8");
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
          throw new UsageError("--context", `cannot read ${file}: ${(err as Error).message}`);
        }
      },
    });
    return this.resolved;
  }

  /** The tenant UUID, checked locally. */
  protected tenant(): string {
    const t = this.connectionSettings().tenant;
    if (!t) throw new UsageError("--tenant", "no tenant: give --tenant, set QIMCTL_TENANT, or put one in the context (qimctl context set NAME --tenant UUID)");
    return fromSetting(t, () => uuid("--tenant", t.value));
  }

  /**
   * Opens the admin API client. Everything that can be checked locally (endpoint shape, files,
   * cert/key pairing) is checked here, before the first byte goes out.
   */
  protected async connect(): Promise<Connection> {
    const s = this.connectionSettings();
    const endpoint = s.endpoint ? fromSetting(s.endpoint, () => checkEndpoint("--endpoint", s.endpoint!.value)) : checkEndpoint("--endpoint", undefined);
    const deadlineMs = seconds("--timeout", this.flags.timeout)!;
    const insecure = s.insecure.value;
    this.failureContext = { endpoint, insecure, timeoutMs: deadlineMs };
    let caPem: string | undefined;
    let certPem: string | undefined;
    let keyPem: string | undefined;
    if (!insecure) {
      if (s.ca) caPem = readPem(s.ca, "--ca");
      if (s.cert && !s.key) throw new UsageError("--key", `a client certificate (${s.cert.origin}) needs its key: give --key or QIMCTL_KEY`);
      if (s.key && !s.cert) throw new UsageError("--cert", `a client key (${s.key.origin}) needs its certificate: give --cert or QIMCTL_CERT`);
      if (s.cert && s.key) {
        certPem = readPem(s.cert, "--cert");
        keyPem = readPem(s.key, "--key");
        checkKeyPair(s.cert, certPem, s.key, keyPem);
      }
      this.failureContext = { ...this.failureContext, ...(certPem ? { certPem } : {}), ...(caPem ? { caPem } : {}) };
      if (certPem && keyPem) this.probeTls = { certPem, keyPem, ...(caPem ? { caPem } : {}) };
      // grpc-js sets the TLS server name to the endpoint's host; for an IP literal Node prints a
      // DEP0123 warning on every connection, noise on an operator's terminal.
      const host = endpoint.replace(/:\d+$/, "").replace(/^\[|\]$/g, "");
      if (isIP(host)) process.noDeprecation = true;
    }
    const { connectAdmin } = await import("../admin-api/client.js");
    this.client = connectAdmin({
      endpoint,
      insecure,
      deadlineMs,
      ...(caPem ? { caPem } : {}),
      ...(certPem ? { certPem } : {}),
      ...(keyPem ? { keyPem } : {}),
    });
    return { client: this.client, endpoint };
  }

  override async finally(err: Error | undefined): Promise<void> {
    this.client?.close();
    await super.finally(err);
  }
}
