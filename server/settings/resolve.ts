import { accessSync, closeSync, constants, openSync, readFileSync, readSync } from "node:fs";
import { isAlias, isMap, isNode, isScalar, LineCounter, parseDocument, type Document } from "yaml";
import { DAY_MS, parseDurationMs, parseHostPort, parseRedisAddr } from "../../core/base/index.js";
import { LISTENERS } from "../listeners.js";
import { CONFIG_ENV, SETTING_BY_KEY, SETTINGS, type SettingSpec } from "./schema.js";

/** Where a setting's value came from, strongest first. */
export type SettingSource = "flag" | "env" | "file" | "default";

/**
 * A setting that cannot be used: `where` names it the way the operator gave it — `--redis-user`,
 * `QIM_REDIS_PASSWORD`, or `config FILE: redis.user` — so the message points at the line to fix.
 * Nothing has been started or changed when it is thrown.
 */
export class SettingsError extends Error {
  constructor(readonly where: string, message: string, readonly key?: string) {
    super(`${where}: ${message}`);
    this.name = "SettingsError";
  }

  /** The flag to blame in a usage error (the CLI's `field`). */
  get flag(): string {
    if (this.where.startsWith("--")) return this.where;
    const spec = this.key ? SETTING_BY_KEY.get(this.key) : undefined;
    return spec?.flag ? `--${spec.flag}` : this.where;
  }
}

export interface SettingInputs {
  /** Flag values by flag name (no dashes); undefined: not given. */
  flags: Readonly<Record<string, unknown>>;
  env: NodeJS.ProcessEnv;
  /** The config file (--config), else QIM_CONFIG from env. */
  configPath?: string | undefined;
}

export interface ResolvedSettings {
  /** key → parsed value; a key without a value is unset. */
  values: ReadonlyMap<string, unknown>;
  sources: ReadonlyMap<string, SettingSource>;
  configPath: string | null;
  /**
   * Required settings given nowhere (the TLS files without --insecure-dev, a Redis), each as the
   * error start-up would refuse with. Only a resolution that allows them (`server config`, which
   * shows the defaults of an empty command line) returns any; otherwise the first one is thrown.
   */
  missing: readonly SettingsError[];
}

/** How resolveSettings treats a required setting given nowhere. */
export interface ResolveOptions {
  /** Collect it in `missing` instead of throwing (`server config`, `--print-config`). */
  allowMissing?: boolean;
}

const KEY_SEGMENT = /^[a-z][a-z0-9_]*$/;

/** The edit distance of two short strings (for "did you mean"). */
function distance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
  }
  return d[a.length]![b.length]!;
}

function suggestion(key: string): string {
  let best: string | undefined;
  let bestD = Infinity;
  for (const s of SETTINGS) {
    const dd = distance(key, s.key);
    if (dd < bestD) { bestD = dd; best = s.key; }
  }
  return best !== undefined && bestD <= Math.max(2, Math.floor(key.length / 4)) ? ` (did you mean ${best}?)` : "";
}

/**
 * The largest config file read (1 MiB): every setting with comments is a few KB, and the longest
 * legitimate value, a Redis Cluster seed list, stays under 64 KB even for a thousand nodes. Past
 * it the file is refused unread beyond the limit: no YAML parse of a runaway or hostile file.
 */
export const CONFIG_FILE_MAX_BYTES = 1024 * 1024;

/** A file's text, refused once more than `maxBytes` are read (a FIFO or a device too: its size is not trusted). */
function readWithin(path: string, maxBytes: number): string {
  const fd = openSync(path, "r");
  try {
    const buf = Buffer.alloc(maxBytes + 1);
    let n = 0;
    for (let got = -1; got !== 0 && n <= maxBytes;) {
      got = readSync(fd, buf, n, buf.length - n, null);
      n += got;
    }
    if (n > maxBytes) throw new SettingsError(`config ${path}`, `larger than ${maxBytes} bytes (CONFIG_FILE_MAX_BYTES); a config file holds settings, not data`);
    return buf.toString("utf8", 0, n);
  } finally {
    closeSync(fd);
  }
}

/**
 * The config file's settings as key → raw value; unknown keys, keys given twice and sections that
 * hold a value refuse the file. Linear in its size: the YAML library's own duplicate-key check
 * compares each key with every key before it (quadratic: 40,000 keys took a minute), so keys are
 * checked here, against a set, while walking the parsed document.
 */
export function readConfigFile(path: string): Map<string, unknown> {
  let text: string;
  try {
    text = readWithin(path, CONFIG_FILE_MAX_BYTES);
  } catch (err) {
    if (err instanceof SettingsError) throw err;
    throw new SettingsError(`config ${path}`, `cannot read it: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  const lines = new LineCounter();
  const doc: Document = parseDocument(text, { uniqueKeys: false, prettyErrors: true, lineCounter: lines });
  const invalid = (line: number | undefined, message: string) => new SettingsError(`config ${path}${line ? ` line ${line}` : ""}`, `not valid YAML: ${message.split("\n")[0]}`);
  const first = doc.errors[0];
  if (first) throw invalid(first.linePos?.[0]?.line, first.message);
  const out = new Map<string, unknown>();
  if (doc.contents === null || (isScalar(doc.contents) && doc.contents.value === null)) return out;
  const isSection = (prefix: string) => SETTINGS.some((s) => s.key.startsWith(`${prefix}.`));
  const walk = (raw: unknown, prefix: string) => {
    const node = isAlias(raw) ? raw.resolve(doc) : raw;
    if (!isMap(node)) {
      throw new SettingsError(`config ${path}`, prefix === "" ? "expected a mapping of settings at the top level" : `${prefix} is a section: expected a mapping of its settings`);
    }
    const seen = new Set<string>();
    for (const pair of node.items) {
      const name = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
      const key = prefix === "" ? name : `${prefix}.${name}`;
      if (seen.has(name)) {
        const offset = isScalar(pair.key) ? pair.key.range?.[0] : undefined;
        throw invalid(offset === undefined ? undefined : lines.linePos(offset).line, `Map keys must be unique (${key})`);
      }
      seen.add(name);
      if (!KEY_SEGMENT.test(name)) throw new SettingsError(`config ${path}`, `unknown key ${key}${suggestion(key)}`, key);
      if (SETTING_BY_KEY.has(key)) out.set(key, isNode(pair.value) ? pair.value.toJS(doc) : pair.value);
      else if (isSection(key)) walk(pair.value, key);
      else throw new SettingsError(`config ${path}`, `unknown key ${key}${suggestion(key)}`, key);
    }
  };
  walk(doc.contents, "");
  return out;
}

const listOf = (v: unknown): unknown[] => (Array.isArray(v) ? v : typeof v === "string" ? v.split(",") : [v]);

/** Parses one raw value (a flag's or environment's text, or a YAML value) for its spec; throws a plain message. */
export function parseValue(spec: SettingSpec, raw: unknown): unknown {
  const text = (what: string) => {
    if (typeof raw === "number" && what !== "string") return String(raw);
    if (typeof raw !== "string") throw new Error(`expected ${what}, got ${JSON.stringify(raw)}`);
    return raw.trim();
  };
  switch (spec.kind) {
    case "address":
    case "address-or-off": {
      const t = text("host:port");
      if (spec.kind === "address-or-off" && t.toLowerCase() === "off") return null;
      if (!parseHostPort(t, { allowPortZero: true })) throw new Error(`expected host:port${spec.kind === "address-or-off" ? " or off" : ""} with a port from 0 to 65535, got ${JSON.stringify(t.slice(0, 80))}`);
      return t;
    }
    case "redis-addresses": {
      const items = listOf(raw).map((x) => (typeof x === "string" ? x.trim() : x)).filter((x) => x !== "");
      if (items.length === 0) throw new Error("expected at least one address");
      for (const x of items) {
        if (typeof x !== "string") throw new Error(`expected addresses as text, got ${JSON.stringify(x)}`);
        parseRedisAddr(x);
      }
      return items as string[];
    }
    case "addresses": {
      const items = listOf(raw).map((x) => (typeof x === "string" ? x.trim() : x)).filter((x) => x !== "");
      if (items.length === 0) throw new Error("expected at least one host[:port]");
      for (const x of items) {
        if (typeof x !== "string" || !/^(\[[0-9a-f:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$/i.test(x)) throw new Error(`expected host[:port], got ${JSON.stringify(x)}`);
      }
      return items as string[];
    }
    case "boolean": {
      if (typeof raw === "boolean") return raw;
      const t = text("true or false").toLowerCase();
      if (["true", "1", "yes", "on"].includes(t)) return true;
      if (["false", "0", "no", "off"].includes(t)) return false;
      throw new Error(`expected true or false, got ${JSON.stringify(t.slice(0, 40))}`);
    }
    case "integer": {
      const n = typeof raw === "number" ? raw : Number(text("an integer"));
      if (!Number.isSafeInteger(n) || n < (spec.min ?? -Infinity) || n > (spec.max ?? Infinity)) {
        throw new Error(`expected an integer from ${spec.min} to ${spec.max}, got ${JSON.stringify(raw)}`);
      }
      return n;
    }
    case "duration":
      return parseDuration(text("a duration such as 90s, 30m, 6h or 1d"));
    case "size":
      return parseSize(text("a size such as 64MiB, 512KiB or 1GiB"));
    case "enum": {
      // case-insensitive, answered in the schema's spelling (LOCAL_QUORUM, NetworkTopologyStrategy)
      const t = text(`one of ${spec.values!.join(", ")}`).toUpperCase();
      const found = spec.values!.find((v) => v.toUpperCase() === t);
      if (found === undefined) throw new Error(`expected one of ${spec.values!.join(", ")}, got ${JSON.stringify(t.slice(0, 40))}`);
      return found;
    }
    case "enum-list": {
      const items = listOf(raw).map((x) => (typeof x === "string" ? x.trim().toLowerCase() : x)).filter((x) => x !== "");
      if (items.length === 0) throw new Error(`expected one or more of ${spec.values!.join(", ")}`);
      for (const x of items) {
        if (typeof x !== "string" || !spec.values!.includes(x)) throw new Error(`expected one or more of ${spec.values!.join(", ")}, got ${JSON.stringify(String(x).slice(0, 40))}`);
      }
      // in the declared order, once each
      return spec.values!.filter((v) => items.includes(v));
    }
    case "string":
    case "path":
    case "secret": {
      if (typeof raw !== "string" || raw.trim() === "") throw new Error(`expected ${spec.kind === "secret" ? "the password as" : "a non-empty"} text`);
      return spec.kind === "secret" ? raw : raw.trim();
    }
    case "uuid": {
      const t = text("a UUID").toLowerCase();
      if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(t)) throw new Error(`expected a UUID (8-4-4-4-12 hex digits), got ${JSON.stringify(t.slice(0, 60))}`);
      return t;
    }
    case "file": {
      const f = text("a file path");
      if (f === "") throw new Error("expected a file path");
      try {
        accessSync(f, constants.R_OK);
      } catch (err) {
        throw new Error(`cannot read ${f}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
      }
      return f;
    }
  }
}

/**
 * A duration such as 90s, 30m, 6h or 1d (also ms; a bare number is seconds) in milliseconds;
 * "off" (or 0) is 0: the dispatch log is never trimmed. Throws an Error that says what it expects.
 */
export function parseDuration(text: string): number {
  const ms = parseDurationMs(text, 1000, 365 * DAY_MS);
  if (ms === null) throw new Error(`expected a duration from 1s to 365d such as 90s, 30m, 6h or 1d (or off), got ${JSON.stringify(text.slice(0, 32))}`);
  return ms;
}

const UNIT_BYTES: Record<string, number> = { "": 1, b: 1, kib: 1024, mib: 1024 ** 2, gib: 1024 ** 3, tib: 1024 ** 4, kb: 1000, mb: 1000 ** 2, gb: 1000 ** 3, tb: 1000 ** 4 };
/** The smallest size a setting takes: a file of fewer bytes would hold less than one record. */
export const SIZE_MIN_BYTES = 4096;

/**
 * A size in bytes: a whole number with an optional unit, binary (KiB, MiB, GiB, TiB) or decimal
 * (KB, MB, GB, TB), any case, e.g. 64MiB, 512KiB, 100MB, 4096; "off" (or 0) is 0. From 4 KiB to
 * 1 PiB. Throws an Error that says what it expects.
 */
export function parseSize(text: string): number {
  const t = text.trim().toLowerCase().replace(/\s+/g, "");
  if (t === "off" || t === "0") return 0;
  const m = /^(\d+(?:\.\d+)?)([kmgt]i?b|b)?$/.exec(t);
  const bytes = m ? Math.round(Number(m[1]) * UNIT_BYTES[m[2] ?? ""]!) : NaN;
  if (!Number.isSafeInteger(bytes) || bytes < SIZE_MIN_BYTES || bytes > 1024 ** 5) {
    throw new Error(`expected a size from 4KiB to 1PiB such as 64MiB, 512KiB, 1GiB or 100MB (or off), got ${JSON.stringify(text.slice(0, 32))}`);
  }
  return bytes;
}

/**
 * Every setting from its strongest source: a flag, then the environment, then the config file,
 * then the default. Each value is parsed where it was given, so an error names that place.
 */
export function resolveSettings(inputs: SettingInputs, opts: ResolveOptions = {}): ResolvedSettings {
  const configPath = inputs.configPath ?? (inputs.env[CONFIG_ENV]?.trim() || undefined);
  const file = configPath !== undefined ? readConfigFile(configPath) : new Map<string, unknown>();
  const values = new Map<string, unknown>();
  const sources = new Map<string, SettingSource>();
  for (const spec of SETTINGS) {
    const fromFlag = spec.flag ? inputs.flags[spec.flag] : undefined;
    const envParts = spec.env.map((name) => inputs.env[name]).filter((v): v is string => v !== undefined && v.trim() !== "");
    let raw: unknown;
    let source: SettingSource;
    let where: string;
    if (fromFlag !== undefined) {
      raw = fromFlag; source = "flag"; where = `--${spec.flag}`;
    } else if (envParts.length > 0) {
      raw = envParts.join(","); source = "env"; where = spec.env.filter((name) => inputs.env[name]?.trim()).join(" + ");
    } else if (file.has(spec.key)) {
      raw = file.get(spec.key); source = "file"; where = `config ${configPath}`;
    } else if (spec.default !== undefined) {
      raw = spec.default; source = "default"; where = spec.key;
    } else continue;
    try {
      values.set(spec.key, parseValue(spec, raw));
    } catch (err) {
      throw new SettingsError(where, source === "file" ? `${spec.key}: ${(err as Error).message}` : (err as Error).message, spec.key);
    }
    sources.set(spec.key, source);
  }
  // standalone instances and Cluster seeds from different sources: the stronger one stands (as a
  // --redis-cluster flag always overrode QIM_REDIS_ADDR); from the environment, the Cluster seeds
  // (QIM_REDIS_CLUSTER_SEEDS) win, as before; from one flag set or one file, it is an error below
  if (values.has("redis.addrs") && values.has("redis.cluster")) {
    const rank: SettingSource[] = ["flag", "env", "file", "default"];
    const a = rank.indexOf(sources.get("redis.addrs")!);
    const c = rank.indexOf(sources.get("redis.cluster")!);
    const drop = a < c ? "redis.cluster" : c < a || sources.get("redis.cluster") === "env" ? "redis.addrs" : null;
    if (drop) { values.delete(drop); sources.delete(drop); }
  }
  const missing: SettingsError[] = [];
  const r: ResolvedSettings = { values, sources, configPath: configPath ?? null, missing };
  checkCombinations(r, (err) => {
    if (!opts.allowMissing) throw err;
    missing.push(err);
  });
  return r;
}

/** Where a resolved key came from, as an error names it. */
function whereOf(r: ResolvedSettings, key: string): string {
  const spec = SETTING_BY_KEY.get(key)!;
  switch (r.sources.get(key)) {
    case "flag": return `--${spec.flag}`;
    case "env": return spec.env.join(" + ");
    case "file": return `config ${r.configPath}: ${key}`;
    case "default": return key;
    // not given anywhere: name it the way most operators give it
    default: return spec.flag ? `--${spec.flag}` : spec.env[0] ?? key;
  }
}

/** True for an address only this machine can reach: 127.0.0.0/8, ::1, localhost. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase();
  return h === "localhost" || h === "::1" || /^127(\.\d{1,3}){3}$/.test(h) || h === "::ffff:127.0.0.1";
}

/** Settings that are fine alone but not together; `required` is told of each required setting given nowhere. */
function checkCombinations(r: ResolvedSettings, required: (err: SettingsError) => void): void {
  const has = (k: string) => r.values.has(k);
  const get = <T>(k: string) => r.values.get(k) as T;
  const fail = (key: string, message: string): never => { throw new SettingsError(whereOf(r, key), message, key); };
  if (get<boolean>("insecure_dev")) {
    if (has("deny_list")) fail("deny_list", "needs mTLS: --insecure-dev has no client certificates to refuse");
  } else {
    for (const key of ["tls.ca", "tls.cert", "tls.key"]) {
      if (!has(key)) required(new SettingsError(whereOf(r, key), "mTLS needs --tls-ca, --tls-cert and --tls-key (create them with `qimctl certs init` and `qimctl certs issue-server`), or --insecure-dev on a development machine", key));
    }
  }
  // each listener's own combinations (server/listeners/<name>/settings.ts), in list order
  const check = {
    has, get, fail, insecureDev: get<boolean>("insecure_dev") === true, anyAddress: get<boolean>("insecure_dev_allow_non_loopback") === true,
    hostOf: (key: string) => {
      const v = get<string | null | undefined>(key);
      return v === null || v === undefined ? null : parseHostPort(v, { allowPortZero: true })!.host;
    },
    isLoopback: isLoopbackHost,
  };
  for (const l of LISTENERS) l.settings.check?.(check);
  if (has("redis.addrs") && has("redis.cluster")) {
    fail("redis.cluster", "give either standalone instances (--redis) or Cluster seeds (--redis-cluster), not both");
  }
  if (!has("redis.addrs") && !has("redis.cluster")) {
    required(new SettingsError("--redis", "no Redis configured: give --redis host:port (or redis.addrs in the config file, or QIM_REDIS_ADDR), or --redis-cluster seeds", "redis.addrs"));
  }
  for (const store of ["redis", "cassandra"]) {
    if (has(`${store}.password`) && has(`${store}.password_file`)) fail(`${store}.password_file`, `give the password once: ${store}.password_file or ${store}.password (${SETTING_BY_KEY.get(`${store}.password`)!.env[0]}), not both`);
    if (has(`${store}.tls.cert`) !== has(`${store}.tls.key`)) fail(has(`${store}.tls.cert`) ? `${store}.tls.cert` : `${store}.tls.key`, `a client certificate needs both ${store}.tls.cert and ${store}.tls.key`);
  }
  if (has("cassandra.user") && !has("cassandra.password") && !has("cassandra.password_file")) {
    fail("cassandra.user", "needs a password: cassandra.password_file (--cassandra-password-file) or QIM_CASSANDRA_PASSWORD");
  }
  if (has("redis.user") && !has("redis.password") && !has("redis.password_file")) {
    fail("redis.user", "needs a password: redis.password_file (--redis-password-file) or QIM_REDIS_PASSWORD");
  }
  const ackTimeout = get<number>("redis.ack_timeout");
  if (get<number>("redis.ack_replicas") > 0 && (ackTimeout === 0 || ackTimeout > 4000)) {
    fail("redis.ack_timeout", "with redis.ack_replicas above 0, give a wait from 1s to 4s (below the store's 5 s command timeout)");
  }
  const ttl = get<number>("cluster.lease_ttl");
  const beat = get<number>("cluster.heartbeat_interval");
  if (ttl === 0) fail("cluster.lease_ttl", "a node's lease cannot be off: give a duration such as 5s");
  if (beat === 0) fail("cluster.heartbeat_interval", "a node's heartbeat cannot be off: give a duration such as 1s");
  if (ttl < 2 * beat) fail("cluster.lease_ttl", `must be at least twice cluster.heartbeat_interval (${beat / 1000}s): a node heartbeats more than once per lease`);
  if (has("node.id") && !/^[A-Za-z0-9._-]{1,64}$/.test(get<string>("node.id"))) fail("node.id", "expected 1 to 64 of A-Z a-z 0-9 . _ -");
  if (!has("cassandra.contact_points")) {
    for (const key of SETTINGS.filter((s) => s.section === "cassandra" && s.key !== "cassandra.contact_points" && s.default === undefined).map((s) => s.key)) {
      if (has(key)) fail(key, "needs --cassandra-contact-points (without it the Redis-hash development fallback is the authority)");
    }
    for (const key of ["cassandra.tls.enabled"]) if (get<boolean>(key)) fail(key, "needs --cassandra-contact-points");
  }
}

/** A password from its file (one trailing newline dropped) or its value. */
export function readSecret(r: ResolvedSettings, store: "redis" | "cassandra"): string | undefined {
  const file = r.values.get(`${store}.password_file`) as string | undefined;
  if (file !== undefined) {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (err) {
      throw new SettingsError(whereOf(r, `${store}.password_file`), `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`, `${store}.password_file`);
    }
    const pw = text.replace(/\r?\n$/, "");
    if (pw === "") throw new SettingsError(whereOf(r, `${store}.password_file`), `${file} is empty`, `${store}.password_file`);
    return pw;
  }
  return r.values.get(`${store}.password`) as string | undefined;
}
