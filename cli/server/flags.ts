import type { Interfaces } from "@oclif/core";
import * as Flags from "@oclif/core/flags";
import { CONFIG_ENV, CONFIG_FLAG, helpOf, SETTINGS } from "../../server/settings/schema.js";
import { UsageError } from "../exit-codes.js";

/** The flags of every server setting, from the schema (no defaults or env here: resolveSettings applies them, so each value's source is known). */
export function settingFlags() {
  const out: Interfaces.FlagInput = {
    [CONFIG_FLAG]: Flags.string({ description: `YAML config file with any of these settings (env ${CONFIG_ENV}); flags and environment override it. Reference: docs/config-reference.md` }),
  };
  for (const spec of SETTINGS) {
    if (!spec.flag) continue;
    const helpGroup = spec.section === "redis" ? "REDIS" : spec.section === "cassandra" ? "AUTHORITY" : undefined;
    out[spec.flag] = spec.kind === "boolean"
      ? Flags.boolean({ allowNo: true, description: helpOf(spec), ...(helpGroup ? { helpGroup } : {}) })
      : Flags.string({ description: helpOf(spec), ...(helpGroup ? { helpGroup } : {}) });
  }
  return out;
}

/**
 * The settings from these flags, the environment and the config file (server/settings); a
 * setting that cannot be used is a UsageError naming its flag (exit 2). Loads the resolver (and
 * its YAML parser) only when a command runs, not for --help.
 */
export async function resolveFromFlags(
  flags: Readonly<Record<string, unknown>>,
  opts: import("../../server/settings/index.js").ResolveOptions = {},
): Promise<import("../../server/settings/index.js").ResolvedSettings> {
  const { resolveSettings, SettingsError } = await import("../../server/settings/index.js");
  try {
    return resolveSettings({ flags: Object.fromEntries(SETTINGS.filter((s) => s.flag).map((s) => [s.flag!, flags[s.flag!]])), env: process.env, configPath: flags[CONFIG_FLAG] as string | undefined }, opts);
  } catch (err) {
    throw err instanceof SettingsError ? usageErrorOf(err) : err;
  }
}

/** A SettingsError as the CLI's usage error: the flag to blame and the message without it. */
export function usageErrorOf(err: import("../../server/settings/index.js").SettingsError): UsageError {
  return new UsageError(err.flag, err.message.startsWith(`${err.flag}: `) ? err.message.slice(err.flag.length + 2) : err.message);
}
