import { BaseCommand } from "../../base.js";
import { resolveFromFlags, settingFlags, usageErrorOf } from "../../server/flags.js";
import type { ServerConfigResult } from "../../server/results.js";

export default class ServerConfig extends BaseCommand<typeof ServerConfig> {
  static override summary = "Show the settings `server start` would run with: flags, environment, config file and defaults resolved, passwords redacted.";
  static override description = `Takes exactly the flags of \`server start\` (and reads the same environment variables and --config file), checks them the same way, and prints the effective settings as a config file with the source of each value, or with --output json the settings nested as in the file plus a key → source map. Nothing is started or contacted. Passwords show as <redacted>; files are named, never read out.

The same as \`qim-admin-server --print-config\`. Reference of every key: docs/config-reference.md.

Exit codes: 0 the settings are valid; 2 a setting is not (the flag, variable or config key is named).`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --config /etc/qim/server.yaml",
    {
      description: "Where did the Redis address come from?",
      command: "<%= config.bin %> <%= command.id %> --config /etc/qim/server.yaml --output json | jq '.sources[\"redis.addrs\"]'",
    },
  ];
  static override flags = settingFlags();

  async run(): Promise<ServerConfigResult> {
    const resolved = await resolveFromFlags(this.flags as Record<string, unknown>);
    const { effectiveSettings, renderEffective, SettingsError } = await import("../../../admin-api/settings/index.js");
    const { toDaemonSettings } = await import("../../../admin-api/daemon-settings.js");
    try {
      // what server start would do next: read the password files (their contents stay here)
      toDaemonSettings(resolved);
    } catch (err) {
      throw err instanceof SettingsError ? usageErrorOf(err) : err;
    }
    if (!this.jsonEnabled()) process.stdout.write(renderEffective(resolved));
    return effectiveSettings(resolved);
  }
}
