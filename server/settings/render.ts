import { stringify } from "yaml";
import type { ResolvedSettings, SettingSource } from "./resolve.js";
import { CONFIG_ENV, CONFIG_FLAG, SETTING_BY_KEY, SETTINGS, type SettingSpec } from "./schema.js";

export const REDACTED = "<redacted>";

/** A duration in ms as the settings take it: 1d, 6h, 90s, 2500ms, off. */
export function formatDuration(ms: number): string {
  if (ms === 0) return "off";
  for (const [unit, size] of [["d", 86_400_000], ["h", 3_600_000], ["m", 60_000], ["s", 1000]] as const) if (ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}

/** A size in bytes as the settings take it: 64MiB, 1GiB, 100MB, 4097, off. */
export function formatSize(bytes: number): string {
  if (bytes === 0) return "off";
  for (const [unit, size] of [["TiB", 1024 ** 4], ["GiB", 1024 ** 3], ["MiB", 1024 ** 2], ["KiB", 1024], ["TB", 1000 ** 4], ["GB", 1000 ** 3], ["MB", 1000 ** 2], ["KB", 1000]] as const) {
    if (bytes % size === 0) return `${bytes / size}${unit}`;
  }
  return String(bytes);
}

/** The value --print-config shows: secrets redacted, durations and sizes as written, everything else as resolved. */
function shown(spec: SettingSpec, value: unknown): unknown {
  if (spec.secret) return REDACTED;
  return spec.kind === "duration" ? formatDuration(value as number) : spec.kind === "size" ? formatSize(value as number) : value;
}

/** A required setting given nowhere, as `server config --output json` lists it. */
export interface MissingSetting {
  key: string;
  /** The flag that gives it (with dashes), or null. */
  flag: string | null;
  env: string[];
  /** What start-up would refuse with. */
  message: string;
}

function missingOf(r: ResolvedSettings): MissingSetting[] {
  return r.missing.map((err) => {
    const spec = SETTING_BY_KEY.get(err.key!)!;
    return { key: spec.key, flag: spec.flag ? `--${spec.flag}` : null, env: [...spec.env], message: err.message };
  });
}

/** Where a setting can be given, for people: "--tls-ca, env QIM_TLS_CA, or tls.ca in the config file". */
function whereToGive(spec: SettingSpec): string {
  return [...(spec.flag ? [`--${spec.flag}`] : []), ...spec.env.map((e) => `env ${e}`), `or ${spec.key} in the config file`].join(", ");
}

/** Effective settings as nested plain data, secrets redacted (`server start --print-config --output json`); `missing` lists the required settings given nowhere. */
export function effectiveSettings(r: ResolvedSettings): { settings: Record<string, unknown>; sources: Record<string, SettingSource>; config: string | null; missing: MissingSetting[] } {
  const settings: Record<string, unknown> = {};
  const sources: Record<string, SettingSource> = {};
  for (const spec of SETTINGS) {
    if (!r.values.has(spec.key)) continue;
    const path = spec.key.split(".");
    let node = settings;
    for (const p of path.slice(0, -1)) node = (node[p] ??= {}) as Record<string, unknown>;
    node[path[path.length - 1]!] = shown(spec, r.values.get(spec.key));
    sources[spec.key] = r.sources.get(spec.key)!;
  }
  return { settings, sources, config: r.configPath, missing: missingOf(r) };
}

const SOURCE_TEXT: Record<SettingSource, (spec: SettingSpec) => string> = {
  flag: (s) => `flag --${s.flag}`,
  env: (s) => `env ${s.env.join(" + ")}`,
  file: () => "config file",
  default: () => "default",
};

/**
 * The effective settings as a config file (YAML) with the source of each value as a comment:
 * what `qim-admin-server --print-config` prints. Feeding it back with --config gives the same
 * settings, except that a redacted password must be given again.
 */
export function renderEffective(r: ResolvedSettings): string {
  const lines = [
    `# qim-admin-server effective settings (strongest first: flag, environment, config file, default)`,
    `# config file: ${r.configPath ?? "none"}`,
  ];
  if (r.missing.length > 0) {
    // comments, so that the file stays one that --config reads (and refuses for what it lacks)
    lines.push("# REQUIRED, NOT SET (start-up refuses without them):");
    for (const m of missingOf(r)) lines.push(`#   ${m.key}: ${whereToGive(SETTING_BY_KEY.get(m.key)!)}`);
  }
  const open: string[] = [];
  for (const spec of SETTINGS) {
    if (!r.values.has(spec.key)) continue;
    const path = spec.key.split(".");
    // close and open sections so that the keys nest as in the file
    let same = 0;
    while (same < open.length && same < path.length - 1 && open[same] === path[same]) same++;
    open.length = same;
    for (let i = same; i < path.length - 1; i++) {
      lines.push(`${"  ".repeat(i)}${path[i]}:`);
      open.push(path[i]!);
    }
    const value = stringify(shown(spec, r.values.get(spec.key)), { flowCollectionPadding: false, collectionStyle: "flow" }).trimEnd();
    lines.push(`${"  ".repeat(path.length - 1)}${path[path.length - 1]}: ${value}  # ${SOURCE_TEXT[r.sources.get(spec.key)!](spec)}`);
  }
  return lines.join("\n") + "\n";
}

const KIND_TEXT: Record<SettingSpec["kind"], string> = {
  address: "host:port",
  "address-or-off": "host:port or off",
  "redis-addresses": "list of host:port / rediss://host:port",
  addresses: "list of host[:port]",
  boolean: "true or false",
  integer: "integer",
  duration: "duration (90s, 30m, 6h, 1d, off)",
  size: "size (64MiB, 512KiB, 1GiB, 100MB, off)",
  string: "text",
  path: "file path",
  file: "file path (must be readable)",
  secret: "password (never a flag)",
  enum: "one of",
  "enum-list": "one or more of",
  uuid: "UUID",
};

/** docs/config-reference.md, generated from the schema the server validates with. */
export function renderReference(): string {
  const out = [
    "# Server configuration reference",
    "",
    "<!-- generated from server/settings/schema.ts and server/listeners/*/settings.ts by `npm run docs:config`; edit the schema, not this file -->",
    "",
    `\`qim-admin-server\` and \`qimctl server start\` read their settings from, strongest first: flags, environment`,
    `variables, the config file (\`--${CONFIG_FLAG} FILE\` or \`${CONFIG_ENV}\`; YAML, keys nested by the dots below),`,
    "and the defaults. An unknown key, a value of the wrong kind or an unreadable file refuses start-up",
    "(exit 2) with the key, flag or variable named. `--print-config` prints the effective settings with",
    "passwords redacted and the source of each value, and exits.",
    "",
    "Passwords have no flag (a command line shows in `ps`): give them in a file (`*.password_file`), in",
    "the environment, or in the config file (keep it mode 0600).",
    "",
  ];
  let section = "";
  for (const spec of SETTINGS) {
    if (spec.section !== section) {
      section = spec.section;
      out.push(`## ${section}`, "", "| key | flag | environment | kind | default | meaning |", "|---|---|---|---|---|---|");
    }
    const kind = spec.kind === "enum" || spec.kind === "enum-list" ? `${KIND_TEXT[spec.kind]} ${spec.values!.join(", ")}` : spec.kind === "integer" ? `integer ${spec.min}–${spec.max}` : KIND_TEXT[spec.kind];
    out.push(`| \`${spec.key}\` | ${spec.flag ? `\`--${spec.flag}\`${spec.kind === "boolean" ? ` / \`--no-${spec.flag}\`` : ""}` : "—"} | ${spec.env.map((e) => `\`${e}\``).join(" + ")} | ${kind} | ${spec.default !== undefined ? `\`${String(spec.default)}\`` : ""} | ${spec.description.replace(/\|/g, "\\|")} |`);
    const next = SETTINGS[SETTINGS.indexOf(spec) + 1];
    if (!next || next.section !== section) out.push("");
  }
  out.push("## Example", "", "```yaml", EXAMPLE.trim(), "```", "");
  return out.join("\n");
}

/** An example file; the settings test checks that it resolves. */
export const EXAMPLE = `
listen: 0.0.0.0:7443
tls:
  ca: /etc/qim/pki/ca.crt
  cert: /etc/qim/pki/server.crt
  key: /etc/qim/pki/server.key
audit:
  log: /var/lib/qim/audit.log
  max_size: 256MiB
  keep: 20
redis:
  addrs: [rediss://redis-1.internal:6380, rediss://redis-2.internal:6380]
  user: qim
  password_file: /etc/qim/redis.password
  tls:
    ca: /etc/qim/redis-ca.crt
dispatch:
  retention: 6h
cassandra:
  contact_points: [cass-1.internal, cass-2.internal]
  local_dc: dc1
  user: qim
  password_file: /etc/qim/cassandra.password
  tls:
    ca: /etc/qim/cassandra-ca.crt
`;
