/**
 * qimctl's exit codes and the one table that turns a failure into one of them (STYLE "The CLI",
 * after etcdctl's named exit codes). Scripts branch on these numbers; they are part of the CLI's
 * contract, documented in `qimctl --help` and docs/operator-guide.md. Nothing else in cli/
 * chooses an exit code.
 *
 * This module imports no grpc-js: gRPC status numbers are fixed by the gRPC spec; a domain code the
 * server names exits as core/errors/ ERROR_CODES declares it.
 */
import { X509Certificate } from "node:crypto";
import { statSync } from "node:fs";
import path from "node:path";
import { ERROR_CODES, isQimErrorCode } from "../core/errors/index.js";

export const EXIT = {
  OK: 0,
  /** A bug or an unexpected server answer (INTERNAL, UNKNOWN, DATA_LOSS, anything unmapped). */
  INTERNAL: 1,
  /** Bad flags or input, found locally before connecting or by the server (INVALID_ARGUMENT). */
  USAGE: 2,
  /** The group (or another named object) does not exist (NOT_FOUND). */
  NOT_FOUND: 3,
  /** A refused precondition: version conflict, membership changed, already exists, unsupported. */
  CONFLICT: 4,
  /** The server could not be reached or did not answer in time. */
  CONNECTION: 5,
  /** The server refused who we are (TLS refusal, UNAUTHENTICATED) or what we asked (PERMISSION_DENIED). */
  AUTH: 6,
  /** Ctrl+C, or a confirmation answered with no. */
  INTERRUPTED: 130,
} as const;

export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** The exit-code table as `qimctl --help` and the operator guide print it. */
export const EXIT_CODE_HELP = [
  ["0", "ok (also: a change that had already taken effect; nothing changed)"],
  ["1", "internal error"],
  ["2", "usage or invalid argument (checked locally before connecting, or INVALID_ARGUMENT from the server; the field is named); also a local file or directory that cannot be used (a key not the certificate's, a config or data dir that is a file or not writable)"],
  ["3", "not found"],
  ["4", "conflict or refused precondition (ABORTED: VERSION_CONFLICT or MEMBERSHIP_CHANGED; FAILED_PRECONDITION; ALREADY_EXISTS, also IDEMPOTENCY_CONFLICT; UNIMPLEMENTED)"],
  ["5", "connection: cannot reach the server, or no answer before --timeout (UNAVAILABLE, DEADLINE_EXCEEDED)"],
  ["6", "authentication or permission: the server refused this client certificate (TLS), UNAUTHENTICATED, PERMISSION_DENIED"],
  ["130", "interrupted (Ctrl+C, or a confirmation answered no)"],
] as const;

export function exitCodeHelp(): string {
  return EXIT_CODE_HELP.map(([code, what]) => `${code.padStart(3)}  ${what}`).join("\n");
}

/** gRPC status codes (grpc/doc/statuscodes.md). */
export const GRPC_STATUS = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;

const STATUS_NAME = Object.fromEntries(Object.entries(GRPC_STATUS).map(([k, v]) => [v, k])) as Record<number, string>;

/** gRPC status → exit code. UNAVAILABLE is refined by `classifyUnavailable` (a TLS refusal is 6). */
export const GRPC_EXIT: Readonly<Record<number, ExitCode>> = {
  [GRPC_STATUS.CANCELLED]: EXIT.CONNECTION,
  [GRPC_STATUS.UNKNOWN]: EXIT.INTERNAL,
  [GRPC_STATUS.INVALID_ARGUMENT]: EXIT.USAGE,
  [GRPC_STATUS.DEADLINE_EXCEEDED]: EXIT.CONNECTION,
  [GRPC_STATUS.NOT_FOUND]: EXIT.NOT_FOUND,
  [GRPC_STATUS.ALREADY_EXISTS]: EXIT.CONFLICT,
  [GRPC_STATUS.PERMISSION_DENIED]: EXIT.AUTH,
  [GRPC_STATUS.RESOURCE_EXHAUSTED]: EXIT.CONNECTION,
  [GRPC_STATUS.FAILED_PRECONDITION]: EXIT.CONFLICT,
  [GRPC_STATUS.ABORTED]: EXIT.CONFLICT,
  [GRPC_STATUS.OUT_OF_RANGE]: EXIT.USAGE,
  [GRPC_STATUS.UNIMPLEMENTED]: EXIT.CONFLICT,
  [GRPC_STATUS.INTERNAL]: EXIT.INTERNAL,
  [GRPC_STATUS.UNAVAILABLE]: EXIT.CONNECTION,
  [GRPC_STATUS.DATA_LOSS]: EXIT.INTERNAL,
  [GRPC_STATUS.UNAUTHENTICATED]: EXIT.AUTH,
};

/** Input refused locally, before any connection: exit 2 with the flag named. */
export class UsageError extends Error {
  constructor(
    /** The flag as typed, e.g. "--group". */
    readonly field: string,
    message: string,
  ) {
    super(`${field}: ${message}`);
    this.name = "UsageError";
  }
}

/**
 * A precondition the CLI can see is refused before it sends a change (exit 4, as the server's
 * FAILED_PRECONDITION): shaped as core's domain errors, so classifyError maps it the same way.
 */
export class PreconditionError extends Error {
  readonly code = "FAILED_PRECONDITION";
  readonly details: { field: string };
  constructor(field: string, message: string) {
    super(message);
    this.name = "PreconditionError";
    this.details = { field };
  }
}

/** Ctrl+C or a declined confirmation. */
export class InterruptedError extends Error {
  constructor(message = "interrupted") {
    super(message);
    this.name = "InterruptedError";
  }
}

/** What the CLI prints for a failure and the code it exits with. */
export interface Failure {
  exitCode: ExitCode;
  /** Stable, machine-readable: the server's qim-error-code, the gRPC status name, or a CLI code. */
  code: string;
  message: string;
  field?: string;
  /** Extra lines for a person (table mode only), e.g. why a certificate may have been refused. */
  hints?: string[];
}

/** What classifyError knows about the connection that failed. */
export interface FailureContext {
  endpoint?: string;
  insecure?: boolean;
  /** The client certificate and CA we presented/trusted (PEM), for hints about a TLS refusal. */
  certPem?: string;
  caPem?: string;
  timeoutMs?: number;
  /** A probe (cli/tls-probe.ts) saw the server close right after a handshake with our certificate. */
  certificateRefused?: boolean;
}

/** A grpc-js ServiceError, by shape (this module does not import grpc-js). */
interface ServiceErrorLike {
  code: number;
  details: string;
  metadata?: { get(key: string): unknown[] };
}

function isServiceError(err: unknown): err is ServiceErrorLike {
  if (typeof err !== "object" || err === null) return false;
  const e = err as { code?: unknown; details?: unknown; metadata?: { get?: unknown } };
  return typeof e.code === "number" && typeof e.details === "string" && STATUS_NAME[e.code] !== undefined;
}

function metadataString(err: ServiceErrorLike, key: string): string | undefined {
  const v = err.metadata?.get(key)?.[0];
  return typeof v === "string" && v !== "" ? v : undefined;
}

/**
 * How grpc-js words an UNAVAILABLE it raised itself while connecting (checked with
 * @grpc/grpc-js 1.14.7 on Node 20 against the real admin server):
 *
 * - closed port: "No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:1. Resolution note: "
 * - unknown host: "Name resolution failed for target dns:nosuchhost.invalid:7443"
 * - no client certificate: "No connection established. Last error: 80DC…:error:0A00045C:SSL routines:ssl3_read_bytes:
 *   tlsv13 alert certificate required:…:SSL alert number 116\n (<time>). Resolution note: "
 * - a certificate of another CA, expired or not yet valid: Node's TLS server checks the client
 *   certificate after the TLS 1.3 handshake and closes the socket without an alert, so grpc-js only
 *   sees the connection close before the HTTP/2 SETTINGS frame:
 *   "No connection established. Last error: Failed to connect (<time>). Resolution note: "
 * - the server's certificate is not trusted by our --ca: "… Last error: Error: self-signed certificate in certificate chain. …"
 *
 * "Failed to connect (" therefore means "TCP and TLS worked, then the server hung up": with a
 * client certificate that is the server refusing it; with --insecure against a TLS server it is
 * the plaintext preface being dropped.
 */
export type UnavailableKind = "tls-refused" | "server-untrusted" | "unreachable";

const TLS_ALERT = /alert (certificate required|unknown ca|bad certificate|certificate expired|certificate revoked|certificate unknown|unsupported certificate|access denied|handshake failure)/i;
const CLOSED_AFTER_TLS = /Last error: Failed to connect \(/;
/** The server reset the connection: a refused certificate at times (the close races our first write), or a network fault. */
const RESET = /Last error: (read|write) (ECONNRESET|EPIPE)/;

/** Whether an UNAVAILABLE is ambiguous enough that a TLS probe should decide it. */
export function needsCertificateProbe(details: string, ctx: Pick<FailureContext, "insecure" | "certPem">): boolean {
  return !ctx.insecure && ctx.certPem !== undefined && (CLOSED_AFTER_TLS.test(details) || RESET.test(details));
}
const SERVER_UNTRUSTED = /self[- ]signed certificate|unable to (get|verify)|certificate has expired|certificate is not yet valid|Hostname\/IP does not match|ERR_TLS_CERT_ALTNAME_INVALID|certificate signature failure/i;

export function classifyUnavailable(details: string, ctx: Pick<FailureContext, "insecure" | "certificateRefused"> = {}): UnavailableKind {
  if (TLS_ALERT.test(details) || ctx.certificateRefused) return "tls-refused";
  if (SERVER_UNTRUSTED.test(details)) return "server-untrusted";
  if (!ctx.insecure && ctx.certificateRefused !== false && CLOSED_AFTER_TLS.test(details)) return "tls-refused";
  return "unreachable";
}

/** grpc-js's wording, without the empty "Resolution note: " tail. */
export function cleanDetails(details: string): string {
  return details.replace(/\s*Resolution note:\s*$/, "").replace(/\n/g, " ").replace(/\s+/g, " ").trim();
}

/** Why the server may have refused our certificate, from what we can check locally. */
export function certificateHints(certPem: string | undefined, caPem: string | undefined, now = new Date()): string[] {
  if (!certPem) return ["no client certificate was presented (--cert/--key, QIMCTL_CERT/QIMCTL_KEY or the context file)"];
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certPem);
  } catch {
    return ["the client certificate file is not a PEM certificate"];
  }
  const hints: string[] = [];
  const subject = cert.subject.replace(/\n/g, ", ");
  if (new Date(cert.validTo).getTime() < now.getTime()) hints.push(`the certificate (${subject}) expired on ${new Date(cert.validTo).toISOString()}`);
  if (new Date(cert.validFrom).getTime() > now.getTime()) hints.push(`the certificate (${subject}) is not valid before ${new Date(cert.validFrom).toISOString()}`);
  if (caPem) {
    try {
      const ca = new X509Certificate(caPem);
      if (!cert.verify(ca.publicKey)) hints.push(`the certificate (${subject}) is not signed by the CA in --ca (${ca.subject.replace(/\n/g, ", ")}); the server most likely trusts only that CA`);
    } catch {
      // an unreadable CA is reported when it is loaded
    }
  }
  if (hints.length === 0) hints.push(`the certificate presented was ${subject}, fingerprint ${cert.fingerprint256}`);
  return hints;
}

/** oclif's parse messages, reworded as "--flag: what is wrong" with the flag as the field. */
export function usageMessage(raw: string): { message: string; field?: string } {
  const text = raw.replace(/\s*See more help with --help\s*$/, "").replace(/^The following errors? occurred:\s*/, "").replace(/\s*\n\s*/g, " ").trim();
  const missing = /^Missing required flag:?\s+-*([a-z][\w-]*)/i.exec(text);
  if (missing) return { message: `--${missing[1]}: missing required flag`, field: `--${missing[1]}` };
  const parsing = /^Parsing --([a-z][\w-]*)\s+(.*)$/i.exec(text);
  if (parsing) return { message: `--${parsing[1]}: ${parsing[2]}`, field: `--${parsing[1]}` };
  const nonexistent = /^Nonexistent flags?:\s+(--?[\w-]+)/i.exec(text);
  if (nonexistent) return { message: `${nonexistent[1]}: no such flag (see --help)`, field: nonexistent[1]! };
  const other = /--([a-z][\w-]*)/i.exec(text);
  return other ? { message: text, field: `--${other[1]}` } : { message: text };
}

/** core's QimError codes (core/errors.ts) → exit code, the same table the admin API's statuses give. */
const DOMAIN_EXIT: Readonly<Record<string, ExitCode>> = {
  INVALID_ARGUMENT: EXIT.USAGE,
  NOT_FOUND: EXIT.NOT_FOUND,
  ALREADY_EXISTS: EXIT.CONFLICT,
  PERMISSION_DENIED: EXIT.AUTH,
  FAILED_PRECONDITION: EXIT.CONFLICT,
  VERSION_CONFLICT: EXIT.CONFLICT,
  MEMBERSHIP_CHANGED: EXIT.CONFLICT,
  IDEMPOTENCY_CONFLICT: EXIT.CONFLICT,
  UNAVAILABLE: EXIT.CONNECTION,
  UNIMPLEMENTED: EXIT.CONFLICT,
  INTERNAL: EXIT.INTERNAL,
};

/** A core QimError, by shape (this module does not import core): a domain code and a details object. */
function isDomainError(err: unknown): err is Error & { code: string; details: Record<string, unknown> } {
  if (!(err instanceof Error)) return false;
  const e = err as { code?: unknown; details?: unknown };
  return typeof e.code === "string" && DOMAIN_EXIT[e.code] !== undefined && typeof e.details === "object" && e.details !== null;
}

/**
 * A file-system call's failure (Node's error carries `syscall` and `path`) on a file or directory
 * the user chose — a key file, --data-dir, $XDG_CONFIG_HOME — is bad input, exit 2 (issue 24): a
 * sentence naming the path, not Node's raw message with exit 1. Permission denied is 2 as well,
 * not 6: 6 is the server refusing who we are; here the operator fixes a path or its mode.
 */
const FS_VERB: Readonly<Record<string, string>> = {
  open: "open", read: "read", write: "write", mkdir: "create the directory", rename: "write", link: "write", unlink: "remove",
  rmdir: "remove", chmod: "set the mode of", stat: "look at", lstat: "look at", access: "use", scandir: "list", copyfile: "copy", fsync: "write",
};
const FS_REASON: Readonly<Record<string, string>> = {
  EACCES: "permission denied",
  EPERM: "operation not permitted",
  EROFS: "read-only file system",
  EISDIR: "it is a directory, not a file",
  ENOENT: "no such file or directory",
  ELOOP: "too many levels of symbolic links",
  ENAMETOOLONG: "the name is too long",
};

type FsError = NodeJS.ErrnoException & { syscall: string; code: string; dest?: unknown };

/** Node's error of a file-system call; `path` is absent on a call by descriptor (readFileSync of a directory: EISDIR on read). */
function asFsError(err: unknown): FsError | undefined {
  if (!(err instanceof Error)) return undefined;
  const e = err as NodeJS.ErrnoException;
  return typeof e.syscall === "string" && typeof e.code === "string" && FS_VERB[e.syscall] !== undefined ? (e as FsError) : undefined;
}

/** Why a file-system call failed, in words ("permission denied", "/x is a file, not a directory"), or undefined. */
export function fileSystemReason(err: unknown): string | undefined {
  const e = asFsError(err);
  if (!e) return undefined;
  // mkdir -p answers EEXIST when a file sits where a directory should be; that is not "already exists"
  if (e.code === "ENOTDIR" || (e.code === "EEXIST" && e.syscall === "mkdir")) return e.path === undefined ? "not a directory" : notADirectory(e.path);
  return FS_REASON[e.code];
}

/** The failure for a file-system error on a path, or undefined for anything else. */
export function fileSystemFailure(err: unknown): Failure | undefined {
  const e = asFsError(err);
  const why = fileSystemReason(err);
  if (!e || e.path === undefined || why === undefined) return undefined;
  const verb = FS_VERB[e.syscall]!;
  // a rename or link writes its destination (the temporary source is ours)
  const target = (e.syscall === "rename" || e.syscall === "link") && typeof e.dest === "string" ? e.dest : e.path;
  return { exitCode: EXIT.USAGE, code: "INVALID_ARGUMENT", message: `cannot ${verb} ${target}: ${why}` };
}

/** Which part of `p` is a file where a directory is needed (`p` itself or an ancestor). */
function notADirectory(p: string): string {
  for (let d = path.resolve(p); ; d = path.dirname(d)) {
    try {
      if (!statSync(d).isDirectory()) return `${d} is a file, not a directory`;
    } catch {
      // missing, or under the file: look further up
    }
    if (path.dirname(d) === d) return "a part of its path is not a directory";
  }
}

/** The one mapping from anything thrown to what qimctl prints and exits with. */
export function classifyError(err: unknown, ctx: FailureContext = {}): Failure {
  if (err instanceof UsageError) return { exitCode: EXIT.USAGE, code: "INVALID_ARGUMENT", message: err.message, field: err.field };
  if (err instanceof InterruptedError) return { exitCode: EXIT.INTERRUPTED, code: "INTERRUPTED", message: err.message };
  if (isServiceError(err)) {
    const status = STATUS_NAME[err.code]!;
    const domain = metadataString(err, "qim-error-code");
    const field = metadataString(err, "qim-error-field");
    const where = ctx.endpoint ?? "the server";
    if (err.code === GRPC_STATUS.UNAVAILABLE && !domain) {
      const details = cleanDetails(err.details);
      switch (classifyUnavailable(err.details, ctx)) {
        case "tls-refused":
          return { exitCode: EXIT.AUTH, code: "CERTIFICATE_REFUSED", message: `the server refused this client certificate: ${details}`, hints: certificateHints(ctx.certPem, ctx.caPem) };
        case "server-untrusted":
          return { exitCode: EXIT.AUTH, code: "SERVER_CERTIFICATE_UNTRUSTED", message: `this client does not trust the server's certificate at ${where}: ${details}`, hints: ["check --ca (the CA that signed the server certificate) and that the endpoint's host name is in the server certificate"] };
        case "unreachable":
          return { exitCode: EXIT.CONNECTION, code: status, message: `cannot reach the server at ${where}: ${details}` };
      }
    }
    if (err.code === GRPC_STATUS.DEADLINE_EXCEEDED) {
      const after = ctx.timeoutMs !== undefined ? ` within ${ctx.timeoutMs / 1000} s (--timeout)` : "";
      return { exitCode: EXIT.CONNECTION, code: status, message: `the server at ${where} did not answer${after}: ${cleanDetails(err.details)}` };
    }
    return {
      // a domain code the server named exits as ERROR_CODES declares it; otherwise by the status
      exitCode: domain !== undefined && isQimErrorCode(domain) ? EXIT[ERROR_CODES[domain].exit] : (GRPC_EXIT[err.code] ?? EXIT.INTERNAL),
      code: domain ?? status,
      message: err.details || status,
      ...(field ? { field } : {}),
    };
  }
  if (isDomainError(err)) {
    // core's own errors, when a command runs the engine in-process (`server start` refused at start-up)
    const field = typeof err.details.field === "string" ? err.details.field : undefined;
    return { exitCode: DOMAIN_EXIT[err.code]!, code: err.code, message: err.message, ...(field ? { field } : {}) };
  }
  if (typeof err === "object" && err !== null) {
    const e = err as { oclif?: { exit?: unknown }; code?: unknown; message?: unknown };
    // oclif's parse errors (missing or unknown flags, bad values) carry an exit code; all are usage
    if (typeof e.oclif?.exit === "number") {
      return { exitCode: EXIT.USAGE, code: "USAGE", ...usageMessage(String(e.message ?? "usage error")) };
    }
    const fs = fileSystemFailure(err);
    if (fs) return fs;
    if (e.code === "EEXIST") return { exitCode: EXIT.CONFLICT, code: "ALREADY_EXISTS", message: String(e.message) };
  }
  return { exitCode: EXIT.INTERNAL, code: "INTERNAL", message: err instanceof Error ? err.message : String(err) };
}
