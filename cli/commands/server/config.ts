import { BaseCommand } from "../../base.js";
import { EXIT } from "../../exit-codes.js";
import { resolveFromFlags, settingFlags, usageErrorOf } from "../../server/flags.js";
import type { ServerConfigResult } from "../../server/results.js";

export default class ServerConfig extends BaseCommand<typeof ServerConfig> {
  static override summary = "Show the settings `server start` would run with: flags, environment, config file and defaults resolved, passwords redacted.";
  static override description = `Takes exactly the flags of \`server start\` (and reads the same environment variables and --config file), checks them the same way, and prints the effective settings as a config file with the source of each value, or with --output json the settings nested as in the file plus a key → source map. Nothing is started or contacted. Passwords show as <redacted>; files are named, never read out.

The same as \`qim-admin-server --print-config\`. Reference of every key: docs/config-reference.md.

Required settings given nowhere (a Redis; the TLS files unless --insecure-dev) do not hide the rest: without any argument it prints every default, lists what is required and not set at the top (in JSON: \`missing\`, each with its key, flag, variables and the refusal) and exits 2 naming them — what \`server start\` would refuse, so that a script checking a configuration with \`server config\` still fails on it.

Exit codes: 0 the settings are valid; 2 a setting is not, or a required one is not set (the flag, variable or config key is named; the settings are printed all the same when only required ones are missing).`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --config /etc/qim/server.yaml",
    {
      description: "The defaults, and what has none (exit 2 until a Redis and the TLS files are given)",
      command: "<%= config.bin %> <%= command.id %>",
    },
    {
      description: "Where did the Redis address come from?",
      command: "<%= config.bin %> <%= command.id %> --config /etc/qim/server.yaml --output json | jq '.sources[\"redis.addrs\"]'",
    },
  ];
  static override flags = settingFlags();

  async run(): Promise<ServerConfigResult> {
    const resolved = await resolveFromFlags(this.flags as Record<string, unknown>, { allowMissing: true });
    const { effectiveSettings, renderEffective, SettingsError } = await import("../../../server/settings/index.js");
    const { toDaemonSettings } = await import("../../../server/daemon-settings.js");
    // what server start would do next, once nothing required is missing: read the password files (their contents stay here)
    if (resolved.missing.length === 0) {
      try {
        toDaemonSettings(resolved);
      } catch (err) {
        throw err instanceof SettingsError ? usageErrorOf(err) : err;
      }
    }
    if (!this.jsonEnabled()) process.stdout.write(renderEffective(resolved));
    const result = effectiveSettings(resolved);
    if (result.missing.length > 0) {
      const first = usageErrorOf(resolved.missing[0]!);
      const names = result.missing.map((m) => (m.flag ? `${m.key} (${m.flag})` : m.key)).join(", ");
      this.failWithResult(result, {
        exitCode: EXIT.USAGE, code: "INVALID_ARGUMENT", field: first.field,
        message: `required, not set: ${names}; server start would refuse to start (${resolved.missing[0]!.message})`,
      });
    }
    return result;
  }
}
