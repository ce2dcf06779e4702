/**
 * Where a command's connection comes from: flags, then environment (`QIMCTL_*`), then a context
 * file (DESIGN §4). The context file is what `qimctl certs issue --write-context` (and later
 * `qimctl dev up`) writes, so that the next command just works:
 *
 *   { "endpoint": "localhost:7443", "ca": "ca.crt", "cert": "alice.crt", "key": "alice.key",
 *     "tenant": "…uuid…", "insecure": false }
 *
 * Relative paths in it are relative to the file's own directory. This module only decides; it
 * reads files through the functions it is given, so its order of precedence is testable alone.
 */
import path from "node:path";
import { UsageError } from "./exit-codes.js";

export interface ContextFile {
  endpoint?: string;
  ca?: string;
  cert?: string;
  key?: string;
  tenant?: string;
  insecure?: boolean;
}

export interface ConnectionFlags {
  endpoint?: string | undefined;
  ca?: string | undefined;
  cert?: string | undefined;
  key?: string | undefined;
  tenant?: string | undefined;
  insecure?: boolean | undefined;
  context?: string | undefined;
}

export type Source = "flag" | "env" | "context" | "default";

/** Where each setting came from, for messages such as "--ca (from QIMCTL_CA): file not found". */
export interface Resolved<T> {
  value: T;
  source: Source;
  /** The flag, variable or file that gave the value, as a person would look for it. */
  origin: string;
}

export interface ResolvedConnection {
  endpoint?: Resolved<string>;
  ca?: Resolved<string>;
  cert?: Resolved<string>;
  key?: Resolved<string>;
  tenant?: Resolved<string>;
  insecure: Resolved<boolean>;
  /** The context file read, if any. */
  contextPath?: string;
}

export const ENV = {
  endpoint: "QIMCTL_ENDPOINT",
  ca: "QIMCTL_CA",
  cert: "QIMCTL_CERT",
  key: "QIMCTL_KEY",
  tenant: "QIMCTL_TENANT",
  context: "QIMCTL_CONTEXT",
} as const;

/** `$XDG_CONFIG_HOME/qimctl/context.json`, else `~/.config/qimctl/context.json`. */
export function defaultContextPath(env: NodeJS.ProcessEnv, home: string): string {
  const base = env.XDG_CONFIG_HOME && path.isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : path.join(home, ".config");
  return path.join(base, "qimctl", "context.json");
}

/** Parses a context file's text; any problem is a usage error naming the file. */
export function parseContextFile(text: string, file: string): ContextFile {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new UsageError("--context", `${file} is not JSON: ${(err as Error).message}`);
  }
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw new UsageError("--context", `${file} must hold a JSON object`);
  const out: ContextFile = {};
  const obj = raw as Record<string, unknown>;
  for (const key of ["endpoint", "ca", "cert", "key", "tenant"] as const) {
    const v = obj[key];
    if (v === undefined || v === null || v === "") continue;
    if (typeof v !== "string") throw new UsageError("--context", `${file}: "${key}" must be a string`);
    out[key] = v;
  }
  if (obj.insecure !== undefined && obj.insecure !== null) {
    if (typeof obj.insecure !== "boolean") throw new UsageError("--context", `${file}: "insecure" must be true or false`);
    out.insecure = obj.insecure;
  }
  return out;
}

export interface ResolveInput {
  flags: ConnectionFlags;
  env: NodeJS.ProcessEnv;
  home: string;
  /** Returns the file's text, or undefined when it does not exist. */
  readText: (file: string) => string | undefined;
}

/**
 * flags > env > context file. The context file is `--context`, else `QIMCTL_CONTEXT`, else the
 * default path; a file named explicitly must exist, the default one may be absent.
 */
export function resolveConnection({ flags, env, home, readText }: ResolveInput): ResolvedConnection {
  const explicit = flags.context ? { file: flags.context, origin: "--context" } : env[ENV.context] ? { file: env[ENV.context]!, origin: ENV.context } : undefined;
  const contextPath = path.resolve(explicit?.file ?? defaultContextPath(env, home));
  const text = readText(contextPath);
  if (text === undefined && explicit) throw new UsageError("--context", `context file ${contextPath} (from ${explicit.origin}) does not exist`);
  const ctx = text === undefined ? {} : parseContextFile(text, contextPath);
  const ctxDir = path.dirname(contextPath);
  const ctxOrigin = `context file ${contextPath}`;

  const pick = (name: "endpoint" | "ca" | "cert" | "key" | "tenant", isPath: boolean): Resolved<string> | undefined => {
    const flag = flags[name];
    if (flag !== undefined && flag !== "") return { value: flag, source: "flag", origin: `--${name}` };
    const fromEnv = env[ENV[name]];
    if (fromEnv !== undefined && fromEnv !== "") return { value: fromEnv, source: "env", origin: ENV[name] };
    const fromCtx = ctx[name];
    if (fromCtx !== undefined) return { value: isPath ? path.resolve(ctxDir, fromCtx) : fromCtx, source: "context", origin: ctxOrigin };
    return undefined;
  };

  const out: ResolvedConnection = {
    insecure: flags.insecure
      ? { value: true, source: "flag", origin: "--insecure" }
      : ctx.insecure !== undefined
        ? { value: ctx.insecure, source: "context", origin: ctxOrigin }
        : { value: false, source: "default", origin: "default" },
  };
  const endpoint = pick("endpoint", false);
  const ca = pick("ca", true);
  const cert = pick("cert", true);
  const key = pick("key", true);
  const tenant = pick("tenant", false);
  if (endpoint) out.endpoint = endpoint;
  if (ca) out.ca = ca;
  if (cert) out.cert = cert;
  if (key) out.key = key;
  if (tenant) out.tenant = tenant;
  if (text !== undefined) out.contextPath = contextPath;
  return out;
}
