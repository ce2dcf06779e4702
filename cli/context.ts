/**
 * Where a command's connection comes from: flags, then environment (`QIMCTL_*`), then a context
 * (DESIGN §4). A context is one of:
 *
 * - a named context of the config file `$XDG_CONFIG_HOME/qimctl/config.json` (`qimctl context
 *   set|use|list|show|delete`; `qimctl dev up` adds `dev`, `qimctl demo` adds `demo`):
 *
 *     { "current": "prod", "contexts": { "prod": { "endpoint": "qim.internal:7443", "ca": "/…/ca.crt",
 *       "cert": "/…/alice.crt", "key": "/…/alice.key", "tenant": "…uuid…", "insecure": false } } }
 *
 * - a context file: one such object alone (what `certs issue --write-context --context F.json` and
 *   `dev up` in `<data-dir>/context.json` write, and what qimctl read before named contexts).
 *
 * `--context` (else `QIMCTL_CONTEXT`) names either: a value with a `/` or ending in `.json` is a
 * file, anything else a context's name. Without either, the config file's current context is used;
 * when there is no config file at all, the old single file `$XDG_CONFIG_HOME/qimctl/context.json`
 * (the config file imports it when it is created: cli/context/config.ts). Relative paths in a
 * context are relative to the file that holds it. This module only decides; it reads files through
 * the functions it is given, so its order of precedence is testable alone.
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
  /** The client gateway devices connect to (wss://HOST:PORT): `qimctl client`'s default --url. */
  gateway?: string;
}

/** A context of the config file; `dev up` marks the ones it writes with its data dir, to know them again. */
export interface NamedContext extends ContextFile {
  dev?: boolean;
  dataDir?: string;
}

/** `$XDG_CONFIG_HOME/qimctl/config.json`: several named contexts and the current one. */
export interface ConfigFile {
  current: string | null;
  contexts: Record<string, NamedContext>;
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
  /** The context's client gateway URL (no flag or variable of its own: `qimctl client --url` overrides it). */
  gateway?: Resolved<string>;
  insecure: Resolved<boolean>;
  /** The file read for the context, if any: the context file, or the config file of a named context. */
  contextPath?: string;
  /** The named context used, if any. */
  contextName?: string;
}

export const ENV = {
  endpoint: "QIMCTL_ENDPOINT",
  ca: "QIMCTL_CA",
  cert: "QIMCTL_CERT",
  key: "QIMCTL_KEY",
  tenant: "QIMCTL_TENANT",
  context: "QIMCTL_CONTEXT",
} as const;

function configDir(env: NodeJS.ProcessEnv, home: string): string {
  const base = env.XDG_CONFIG_HOME && path.isAbsolute(env.XDG_CONFIG_HOME) ? env.XDG_CONFIG_HOME : path.join(home, ".config");
  return path.join(base, "qimctl");
}

/** The old single context file: `$XDG_CONFIG_HOME/qimctl/context.json`, else `~/.config/qimctl/context.json`. */
export function defaultContextPath(env: NodeJS.ProcessEnv, home: string): string {
  return path.join(configDir(env, home), "context.json");
}

/** The config file of the named contexts: `$XDG_CONFIG_HOME/qimctl/config.json`, else `~/.config/qimctl/config.json`. */
export function defaultConfigPath(env: NodeJS.ProcessEnv, home: string): string {
  return path.join(configDir(env, home), "config.json");
}

/** Whether a --context value names a file (it has a `/` or ends in `.json`) rather than a context. */
export function isContextPath(value: string): boolean {
  return value.includes("/") || value.includes(path.sep) || value.endsWith(".json");
}

const CONTEXT_NAME = /^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$/;

/** A context's name: 1–64 letters, digits and `._@-`, starting with a letter or digit, never a path. */
export function contextName(field: string, value: string): string {
  if (!CONTEXT_NAME.test(value) || isContextPath(value)) {
    throw new UsageError(field, `${JSON.stringify(value.slice(0, 80))} is not a context name: 1-64 letters, digits and . _ @ -, starting with a letter or digit, not ending in .json (a value with a / or ending in .json is a context file)`);
  }
  return value;
}

/** One context object's fields, checked; `where` names it in messages. */
function parseContext(raw: unknown, where: string, field: string): NamedContext {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw new UsageError(field, `${where} must hold a JSON object`);
  const out: NamedContext = {};
  const obj = raw as Record<string, unknown>;
  for (const key of ["endpoint", "ca", "cert", "key", "tenant", "gateway", "dataDir"] as const) {
    const v = obj[key];
    if (v === undefined || v === null || v === "") continue;
    if (typeof v !== "string") throw new UsageError(field, `${where}: "${key}" must be a string`);
    out[key] = v;
  }
  for (const key of ["insecure", "dev"] as const) {
    const v = obj[key];
    if (v === undefined || v === null) continue;
    if (typeof v !== "boolean") throw new UsageError(field, `${where}: "${key}" must be true or false`);
    out[key] = v;
  }
  return out;
}

function parseJson(text: string, file: string, field: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(field, `${file} is not JSON: ${(err as Error).message}`);
  }
}

/** Parses a context file's text; any problem is a usage error naming the file. */
export function parseContextFile(text: string, file: string): ContextFile {
  const ctx = parseContext(parseJson(text, file, "--context"), file, "--context");
  delete ctx.dev;
  delete ctx.dataDir;
  return ctx;
}

/** Parses the config file's text: every context checked, `current` one of them (or null). */
export function parseConfigFile(text: string, file: string): ConfigFile {
  const raw = parseJson(text, file, "--context");
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) throw new UsageError("--context", `${file} must hold a JSON object`);
  const obj = raw as Record<string, unknown>;
  const contextsRaw = obj.contexts ?? {};
  if (typeof contextsRaw !== "object" || contextsRaw === null || Array.isArray(contextsRaw)) throw new UsageError("--context", `${file}: "contexts" must be an object of named contexts`);
  const contexts: Record<string, NamedContext> = {};
  for (const [name, value] of Object.entries(contextsRaw)) {
    if (!CONTEXT_NAME.test(name) || isContextPath(name)) throw new UsageError("--context", `${file}: ${JSON.stringify(name)} is not a context name`);
    contexts[name] = parseContext(value, `${file}: context "${name}"`, "--context");
  }
  const current = obj.current ?? null;
  if (current !== null && typeof current !== "string") throw new UsageError("--context", `${file}: "current" must be a context's name or null`);
  if (current !== null && !Object.hasOwn(contexts, current)) {
    throw new UsageError("--context", `${file}: the current context "${current}" is not one of its contexts (${knownNames(contexts)}); choose one with qimctl context use NAME`);
  }
  return { current, contexts };
}

/** The names of the contexts, for messages: "dev, prod", or "none yet". */
export function knownNames(contexts: Record<string, unknown>): string {
  const names = Object.keys(contexts).sort();
  return names.length > 0 ? `known: ${names.join(", ")}` : "there are no contexts yet: add one with qimctl context set NAME --endpoint HOST:PORT …";
}

/** The message for a context name the config file does not have. */
export function unknownContext(name: string, config: ConfigFile | undefined, file: string): string {
  return `no context named "${name}" in ${file}; ${knownNames(config?.contexts ?? {})}`;
}

/** Which context a command uses, and where it came from. */
export type ContextSelection =
  | { kind: "file"; path: string; origin: string; context: ContextFile }
  | { kind: "named"; name: string; config: string; origin: string; context: NamedContext }
  | { kind: "none"; config: string };

export interface SelectInput {
  /** The --context flag's value, if given. */
  flag?: string | undefined;
  env: NodeJS.ProcessEnv;
  home: string;
  /** Returns the file's text, or undefined when it does not exist. */
  readText: (file: string) => string | undefined;
}

/**
 * `--context`, else `QIMCTL_CONTEXT`: a file (it must exist) or a context of the config file (it
 * must be there); else the config file's current context; else, when there is no config file, the
 * old single context file if it exists.
 */
export function selectContext({ flag, env, home, readText }: SelectInput): ContextSelection {
  const explicit = flag ? { value: flag, origin: "--context" } : env[ENV.context] ? { value: env[ENV.context]!, origin: ENV.context } : undefined;
  if (explicit && isContextPath(explicit.value)) {
    const file = path.resolve(explicit.value);
    const text = readText(file);
    if (text === undefined) throw new UsageError("--context", `context file ${file} (from ${explicit.origin}) does not exist`);
    return { kind: "file", path: file, origin: explicit.origin, context: parseContextFile(text, file) };
  }
  const configPath = defaultConfigPath(env, home);
  const configText = readText(configPath);
  const config = configText === undefined ? undefined : parseConfigFile(configText, configPath);
  if (explicit) {
    const name = contextName("--context", explicit.value);
    const context = config && Object.hasOwn(config.contexts, name) ? config.contexts[name] : undefined;
    if (!context) {
      // a file of that name in the working directory was a context file before names existed
      const hint = readText(path.resolve(name)) !== undefined ? ` (a file ${name} exists here: give ./${name} to use it as a context file)` : "";
      throw new UsageError("--context", `${unknownContext(name, config, configPath)} (from ${explicit.origin})${hint}`);
    }
    return { kind: "named", name, config: configPath, origin: explicit.origin, context };
  }
  if (config) {
    return config.current === null
      ? { kind: "none", config: configPath }
      : { kind: "named", name: config.current, config: configPath, origin: "the current context", context: config.contexts[config.current]! };
  }
  const legacy = defaultContextPath(env, home);
  const text = readText(legacy);
  return text === undefined ? { kind: "none", config: configPath } : { kind: "file", path: legacy, origin: "default", context: parseContextFile(text, legacy) };
}

export interface ResolveInput {
  flags: ConnectionFlags;
  env: NodeJS.ProcessEnv;
  home: string;
  /** Returns the file's text, or undefined when it does not exist. */
  readText: (file: string) => string | undefined;
}

/** flags > env > the selected context (selectContext). */
export function resolveConnection({ flags, env, home, readText }: ResolveInput): ResolvedConnection {
  const selected = selectContext({ flag: flags.context, env, home, readText });
  const ctx: ContextFile = selected.kind === "none" ? {} : selected.context;
  const ctxFile = selected.kind === "file" ? selected.path : selected.config;
  const ctxDir = path.dirname(ctxFile);
  const ctxOrigin = selected.kind === "named" ? `context "${selected.name}" of ${selected.config}` : `context file ${ctxFile}`;

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
  if (ctx.gateway !== undefined) out.gateway = { value: ctx.gateway, source: "context", origin: ctxOrigin };
  if (selected.kind !== "none") out.contextPath = ctxFile;
  if (selected.kind === "named") out.contextName = selected.name;
  return out;
}
