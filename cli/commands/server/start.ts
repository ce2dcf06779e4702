import { readFileSync } from "node:fs";
import { toDaemonSettings, type DaemonSettings } from "../../../server/daemon-settings.js";
import { BaseCommand } from "../../base.js";
import { UsageError } from "../../exit-codes.js";
import type { ServerStartResult } from "../../server/results.js";
import { resolveFromFlags, settingFlags, usageErrorOf } from "../../server/flags.js";

export default class ServerStart extends BaseCommand<typeof ServerStart> {
  static override summary = "Run the admin API server in the foreground (the same code as qim-admin-server).";
  static override description = `gRPC over TLS with required client certificates: the principal is the certificate's subject CN, its role the OU (admin, operator, viewer, drill). Backed by the embedded engine on Redis (--redis, --redis-cluster, or QIM_REDIS_ADDR + QIM_MESSAGE_STORE_ADDRS). Every mutating and every refused call goes to the append-only --audit-log before the answer returns. Prometheus metrics on plain HTTP at --metrics-listen (/metrics). Stops cleanly on SIGINT/SIGTERM.

The session projection runs inside the server: a consumer of the dispatch log (kept for --dispatch-retention, default 1d) that keeps each user's conversation list, and a registration task that writes each conversation entering a user's set to the conversation-set authority: Cassandra with --cassandra-contact-points (env QIM_CASSANDRA_CONTACT_POINTS), else a Redis hash (a development fallback, not an authority guarantee). The server logs which one it uses.

Start-up is refused (fail closed, nothing changed) when the projection's audit finds a partition whose checkpoint is beyond the high watermark (the log lost acknowledged records) or a dispatch log of another cluster id / topic / partition count: one line per partition names it.

--deny-list FILE refuses revoked client certificates: one SHA-256 fingerprint per line (# comments), as \`qimctl certs fingerprint\` prints them. The file is polled every second and re-read on SIGHUP, without a restart; a malformed file keeps the previous list (the server logs why). A call made with a listed certificate is refused (PERMISSION_DENIED "certificate revoked", exit 6 for qimctl) and audited with the fingerprint.

Every setting can also come from a YAML file (--config FILE or QIM_CONFIG; keys in docs/config-reference.md) and from its environment variable; a flag overrides the environment, which overrides the file. An unknown key or a bad value refuses start-up with the key named. \`qimctl server config\` (same flags) shows the effective settings, passwords redacted, with where each came from.

A production Redis: rediss://host:port addresses (or --redis-tls) with --redis-tls-ca, an ACL user (--redis-user) and its password from --redis-password-file or QIM_REDIS_PASSWORD — never a flag. Cassandra likewise: --cassandra-user, --cassandra-password-file or QIM_CASSANDRA_PASSWORD, --cassandra-tls-ca. A refused password or certificate is one line naming the user or the check, before anything starts.

--insecure-dev serves plaintext, without client certificates, every caller an admin: development machines only, and only on a loopback --listen (127.0.0.1, ::1, localhost); --insecure-dev-allow-non-loopback overrides that.

Exit codes: 0 stopped cleanly by SIGINT/SIGTERM; 2 bad settings (the flag, variable or config key is named; also an unreadable or malformed --deny-list); 4 start-up refused by the session projection (BEYOND_HIGH, IDENTITY_MISMATCH); 5 Redis or Cassandra unreachable at start-up, or refusing the credentials or the TLS handshake; 1 anything else.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --tls-ca .qim/pki/ca.crt --tls-cert .qim/pki/server.crt --tls-key .qim/pki/server.key --redis 127.0.0.1:6379",
    "QIM_REDIS_ADDR=10.0.0.5:6379 QIM_MESSAGE_STORE_ADDRS=10.0.0.6:6379 <%= config.bin %> <%= command.id %> --listen 0.0.0.0:7443 --tls-ca ca.crt --tls-cert server.crt --tls-key server.key",
    {
      description: "Cassandra as the conversation-set authority, dispatch log kept 6 hours",
      command: "<%= config.bin %> <%= command.id %> --tls-ca ca.crt --tls-cert server.crt --tls-key server.key --redis 10.0.0.5:6379 --cassandra-contact-points 10.0.1.1,10.0.1.2 --cassandra-local-dc dc1 --dispatch-retention 6h",
    },
    {
      description: "All settings from a file; show what it resolves to first",
      command: "<%= config.bin %> server config --config /etc/qim/server.yaml && <%= config.bin %> <%= command.id %> --config /etc/qim/server.yaml",
    },
    {
      description: "A Redis with an ACL user and TLS; the password from a file",
      command: "<%= config.bin %> <%= command.id %> --tls-ca ca.crt --tls-cert server.crt --tls-key server.key --redis rediss://10.0.0.5:6380 --redis-user qim --redis-password-file /etc/qim/redis.password --redis-tls-ca redis-ca.crt",
    },
    {
      description: "Development only: plaintext, every caller an admin",
      command: "<%= config.bin %> <%= command.id %> --insecure-dev --redis 127.0.0.1:6379",
    },
  ];
  static override flags = settingFlags();

  async run(): Promise<ServerStartResult> {
    const resolved = await resolveFromFlags(this.flags as Record<string, unknown>);
    let settings: DaemonSettings;
    try {
      settings = toDaemonSettings(resolved);
    } catch (err) {
      const { SettingsError } = await import("../../../server/settings/index.js");
      throw err instanceof SettingsError ? usageErrorOf(err) : err;
    }
    const denyList = settings.denyList;
    if (denyList !== undefined) {
      const { parseDenyList } = await import("../../../server/deny-list.js");
      try {
        parseDenyList(readFileSync(denyList, "utf8"));
      } catch (err) {
        throw new UsageError("--deny-list", `${denyList}: ${(err as Error).message}`);
      }
    }
    const { runDaemon } = await import("../../../server/daemon.js");
    // runDaemon keeps the process alive (the gRPC server) and exits it on SIGINT/SIGTERM.
    const server = await runDaemon(settings);
    return { listen: settings.listen, port: server.port, metricsPort: server.metricsPort, tls: !settings.insecureDev, auditLog: settings.auditLog };
  }
}
