/** The JSON results of the `context` commands (docs/operator-guide.md). Paths only: never what a key file holds. */
import path from "node:path";
import type { ContextSelection, NamedContext } from "../context.js";
import type { CertificateSummary } from "../certs/x509.js";

/** One named context as `context list` and `context set` print it (paths absolute). */
export interface ContextEntry {
  name: string;
  /** Whether it is the config file's current context. */
  current: boolean;
  endpoint: string | null;
  tenant: string | null;
  /** The client gateway devices connect to (wss://HOST:PORT), if the context names one. */
  gateway: string | null;
  insecure: boolean;
  ca: string | null;
  cert: string | null;
  key: string | null;
  /** The dev stack's data dir when `dev up` (or the demo) wrote this context, else null. */
  devDataDir: string | null;
}

export function contextEntry(name: string, c: NamedContext, current: string | null, configFile: string): ContextEntry {
  const abs = (p: string | undefined) => (p === undefined ? null : path.resolve(path.dirname(configFile), p));
  return {
    name,
    current: current === name,
    endpoint: c.endpoint ?? null,
    tenant: c.tenant ?? null,
    gateway: c.gateway ?? null,
    insecure: c.insecure === true,
    ca: abs(c.ca),
    cert: abs(c.cert),
    key: abs(c.key),
    devDataDir: c.dev === true && c.dataDir !== undefined ? path.resolve(c.dataDir) : null,
  };
}

/** The old context file imported when a change created the config file (cli/context/config.ts). */
export interface ImportedResult {
  name: string;
  from: string;
}

export interface ContextListResult {
  /** $XDG_CONFIG_HOME/qimctl/config.json. */
  config: string;
  configExists: boolean;
  current: string | null;
  /** By name. */
  contexts: ContextEntry[];
  /** The old single context file when commands still read it (there is no config file yet), else null. */
  legacyFile: string | null;
  /** QIMCTL_CONTEXT when set: commands use it instead of the current context. */
  envOverride: string | null;
}

/** A certificate file of a context: whether it is there, and what it says. */
export interface CertificateFile {
  path: string;
  exists: boolean;
  certificate: CertificateSummary | null;
  /** Why there is no certificate (unreadable, not a PEM certificate), or a warning (expired). */
  problem: string | null;
}

/** A key file of a context: its path and mode only; its content is never read. */
export interface KeyFile {
  path: string;
  exists: boolean;
  /** The file's permission bits, e.g. "0600". */
  mode: string | null;
  /** A warning: missing, or readable by others than its owner. */
  problem: string | null;
}

export interface ContextShowResult {
  /** The named context, or null for a context file. */
  name: string | null;
  /** The config file of a named context, or the context file. */
  file: string;
  /** How it was chosen: "argument", "--context"/"QIMCTL_CONTEXT" (via the environment), "the current context" or "default" (the old single file). */
  selectedBy: string;
  current: boolean;
  endpoint: string | null;
  tenant: string | null;
  gateway: string | null;
  insecure: boolean;
  ca: CertificateFile | null;
  cert: CertificateFile | null;
  key: KeyFile | null;
  devDataDir: string | null;
}

export interface ContextUseResult {
  config: string;
  current: string;
  previous: string | null;
  /** False: it was the current context already (nothing written). */
  changed: boolean;
  envOverride: string | null;
  imported: ImportedResult | null;
}

export interface ContextSetResult {
  config: string;
  name: string;
  /** True: a new context; false: an existing one updated (or left as it was). */
  created: boolean;
  /** False: the context already held exactly these values (nothing written). */
  changed: boolean;
  context: ContextEntry;
  imported: ImportedResult | null;
}

export interface ContextDeleteResult {
  config: string;
  name: string;
  /** False: there was no context of that name (nothing changed). */
  deleted: boolean;
  /** It was the current context: now no context is current. */
  wasCurrent: boolean;
  current: string | null;
  /** The contexts left. */
  remaining: string[];
}

/** `context current`: which context commands use now and what it holds, paths only (no file is opened). */
export interface ContextCurrentResult {
  /** The named context, or null for a context file (--context PATH, QIMCTL_CONTEXT=PATH, the old single file). */
  name: string | null;
  /** The config file of a named context, or the context file. */
  file: string;
  /** How it was chosen, as `context show` says it. */
  selectedBy: string;
  endpoint: string | null;
  tenant: string | null;
  insecure: boolean;
  /** Absolute paths (a relative one is relative to `file`). */
  ca: string | null;
  cert: string | null;
  key: string | null;
}

export function contextCurrent(sel: Exclude<ContextSelection, { kind: "none" }>): ContextCurrentResult {
  const file = sel.kind === "named" ? sel.config : sel.path;
  const abs = (p: string | undefined) => (p === undefined ? null : path.resolve(path.dirname(file), p));
  const c = sel.context;
  return {
    name: sel.kind === "named" ? sel.name : null,
    file,
    selectedBy: sel.origin,
    endpoint: c.endpoint ?? null,
    tenant: c.tenant ?? null,
    insecure: c.insecure === true,
    ca: abs(c.ca),
    cert: abs(c.cert),
    key: abs(c.key),
  };
}
