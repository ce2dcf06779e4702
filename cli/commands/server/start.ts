import { accessSync, constants, readFileSync } from "node:fs";
import * as Flags from "@oclif/core/flags";
import { cassandraSettingsProblem, DAEMON_DEFAULTS, parseDuration, type DaemonSettings } from "../../../admin-api/daemon-settings.js";
import { BaseCommand } from "../../base.js";
import { UsageError } from "../../exit-codes.js";
import type { ServerStartResult } from "../../server/results.js";
import { endpoint as checkEndpoint } from "../../validate.js";

export default class ServerStart extends BaseCommand<typeof ServerStart> {
  static override summary = "Run the admin API server in the foreground (the same code as qim-admin-server).";
  static override description = `gRPC over TLS with required client certificates: the principal is the certificate's subject CN, its role the OU (admin, operator, viewer, drill). Backed by the embedded engine on Redis (--redis, --redis-cluster, or QIM_REDIS_ADDR + QIM_MESSAGE_STORE_ADDRS). Every mutating and every refused call goes to the append-only --audit-log before the answer returns. Prometheus metrics on plain HTTP at --metrics-listen (/metrics). Stops cleanly on SIGINT/SIGTERM.

The session projection runs inside the server: a consumer of the dispatch log (kept for --dispatch-retention, default 1d) that keeps each user's conversation list, and a registration task that writes each conversation entering a user's set to the conversation-set authority: Cassandra with --cassandra-contact-points (env QIM_CASSANDRA_CONTACT_POINTS), else a Redis hash (a development fallback, not an authority guarantee). The server logs which one it uses.

Start-up is refused (fail closed, nothing changed) when the projection's audit finds a partition whose checkpoint is beyond the high watermark (the log lost acknowledged records) or a dispatch log of another cluster id / topic / partition count: one line per partition names it.

--deny-list FILE refuses revoked client certificates: one SHA-256 fingerprint per line (# comments), as \`qimctl certs fingerprint\` prints them. The file is polled every second and re-read on SIGHUP, without a restart; a malformed file keeps the previous list (the server logs why). A call made with a listed certificate is refused (PERMISSION_DENIED "certificate revoked", exit 6 for qimctl) and audited with the fingerprint.

--insecure-dev serves plaintext, without client certificates, every caller an admin: development machines only.

Exit codes: 0 stopped cleanly by SIGINT/SIGTERM; 2 bad flags (also an unreadable or malformed --deny-list); 4 start-up refused by the session projection (BEYOND_HIGH, IDENTITY_MISMATCH); 5 Cassandra unreachable at start-up; 1 anything else (e.g. Redis unreachable).`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --tls-ca .qim/pki/ca.crt --tls-cert .qim/pki/server.crt --tls-key .qim/pki/server.key --redis 127.0.0.1:6379",
    "QIM_REDIS_ADDR=10.0.0.5:6379 QIM_MESSAGE_STORE_ADDRS=10.0.0.6:6379 <%= config.bin %> <%= command.id %> --listen 0.0.0.0:7443 --tls-ca ca.crt --tls-cert server.crt --tls-key server.key",
    {
      description: "Cassandra as the conversation-set authority, dispatch log kept 6 hours",
      command: "<%= config.bin %> <%= command.id %> --tls-ca ca.crt --tls-cert server.crt --tls-key server.key --redis 10.0.0.5:6379 --cassandra-contact-points 10.0.1.1,10.0.1.2 --cassandra-local-dc dc1 --dispatch-retention 6h",
    },
    {
      description: "Development only: plaintext, every caller an admin",
      command: "<%= config.bin %> <%= command.id %> --insecure-dev --redis 127.0.0.1:6379",
    },
  ];
  static override flags = {
    listen: Flags.string({ default: DAEMON_DEFAULTS.listen, description: "gRPC address host:port" }),
    "metrics-listen": Flags.string({ default: DAEMON_DEFAULTS.metricsListen, description: "plain-HTTP /metrics address host:port ('off' to disable)" }),
    "tls-ca": Flags.string({ env: "QIM_TLS_CA", description: "CA certificate that client certificates must chain to" }),
    "tls-cert": Flags.string({ env: "QIM_TLS_CERT", description: "server certificate" }),
    "tls-key": Flags.string({ env: "QIM_TLS_KEY", description: "server private key" }),
    "insecure-dev": Flags.boolean({ default: false, description: "plaintext, no client certificates, every caller admin (development only)" }),
    "audit-log": Flags.string({ env: "QIM_AUDIT_LOG", default: DAEMON_DEFAULTS.auditLog, description: "append-only audit log" }),
    "deny-list": Flags.string({ env: "QIM_DENY_LIST", description: "revoked client certificates: one SHA-256 fingerprint per line (# comments), as `qimctl certs fingerprint` prints them; polled every second and reloaded on SIGHUP" }),
    "audit-fsync": Flags.boolean({ default: true, allowNo: true, description: "fdatasync the audit log before answering (--no-audit-fsync: written to the OS only)" }),
    redis: Flags.string({ description: "comma list of Redis host:port (default: QIM_REDIS_ADDR + QIM_MESSAGE_STORE_ADDRS)" }),
    "redis-cluster": Flags.string({ description: "comma list of Redis Cluster seed host:port (default: QIM_REDIS_CLUSTER_SEEDS)" }),
    partitions: Flags.integer({ default: DAEMON_DEFAULTS.partitions, min: 1, max: 999, description: "dispatch log partitions" }),
    "cluster-id": Flags.string({ default: DAEMON_DEFAULTS.clusterId, description: "dispatch log cluster id" }),
    "dispatch-retention": Flags.string({ default: DAEMON_DEFAULTS.dispatchRetention, description: "how long the dispatch log keeps records: 90s, 30m, 6h, 1d … ('off': never trimmed)" }),
    "cassandra-contact-points": Flags.string({ env: "QIM_CASSANDRA_CONTACT_POINTS", helpGroup: "AUTHORITY", description: "comma list of Cassandra host[:port]: the conversation-set authority (default: the Redis-hash development fallback)" }),
    "cassandra-local-dc": Flags.string({ env: "QIM_CASSANDRA_LOCAL_DC", helpGroup: "AUTHORITY", description: "Cassandra local data center (default datacenter1)" }),
    "cassandra-keyspace": Flags.string({ env: "QIM_CASSANDRA_KEYSPACE", helpGroup: "AUTHORITY", description: "Cassandra keyspace (default qim; created if missing)" }),
    "cassandra-consistency": Flags.string({ env: "QIM_CASSANDRA_CONSISTENCY", helpGroup: "AUTHORITY", description: "Cassandra consistency: LOCAL_QUORUM (default), QUORUM, ONE, …" }),
  };

  async run(): Promise<ServerStartResult> {
    const f = this.flags;
    const listen = checkEndpoint("--listen", f.listen);
    const metricsListen = f["metrics-listen"] === "off" ? null : checkEndpoint("--metrics-listen", f["metrics-listen"]);
    if (!f["insecure-dev"]) {
      for (const flag of ["tls-ca", "tls-cert", "tls-key"] as const) {
        const file = f[flag];
        if (!file) throw new UsageError(`--${flag}`, "mTLS needs --tls-ca, --tls-cert and --tls-key (create them with `qimctl certs init` and `qimctl certs issue-server`), or --insecure-dev on a development machine");
        try {
          accessSync(file, constants.R_OK);
        } catch (err) {
          throw new UsageError(`--${flag}`, `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
        }
      }
    }
    const denyList = f["deny-list"];
    if (denyList !== undefined) {
      if (f["insecure-dev"]) throw new UsageError("--deny-list", "needs mTLS: --insecure-dev has no client certificates to refuse");
      let text: string;
      try {
        text = readFileSync(denyList, "utf8");
      } catch (err) {
        throw new UsageError("--deny-list", `cannot read ${denyList}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
      }
      const { parseDenyList } = await import("../../../admin-api/deny-list.js");
      try {
        parseDenyList(text);
      } catch (err) {
        throw new UsageError("--deny-list", `${denyList}: ${(err as Error).message}`);
      }
    }
    let dispatchRetentionMs: number;
    try {
      dispatchRetentionMs = parseDuration(f["dispatch-retention"]);
    } catch (err) {
      throw new UsageError("--dispatch-retention", (err as Error).message);
    }
    const cassandra = {
      ...(f["cassandra-contact-points"] !== undefined ? { cassandraContactPoints: f["cassandra-contact-points"] } : {}),
      ...(f["cassandra-local-dc"] !== undefined ? { cassandraLocalDc: f["cassandra-local-dc"] } : {}),
      ...(f["cassandra-keyspace"] !== undefined ? { cassandraKeyspace: f["cassandra-keyspace"] } : {}),
      ...(f["cassandra-consistency"] !== undefined ? { cassandraConsistency: f["cassandra-consistency"] } : {}),
    };
    const problem = cassandraSettingsProblem(cassandra);
    if (problem) throw new UsageError(problem.flag, problem.message);
    const settings: DaemonSettings = {
      listen,
      metricsListen,
      insecureDev: f["insecure-dev"],
      auditLog: f["audit-log"],
      auditFsync: f["audit-fsync"],
      partitions: f.partitions,
      clusterId: f["cluster-id"],
      dispatchRetentionMs,
      ...cassandra,
      ...(denyList ? { denyList } : {}),
      ...(f["tls-ca"] ? { tlsCa: f["tls-ca"] } : {}),
      ...(f["tls-cert"] ? { tlsCert: f["tls-cert"] } : {}),
      ...(f["tls-key"] ? { tlsKey: f["tls-key"] } : {}),
      ...(f.redis ? { redis: f.redis } : {}),
      ...(f["redis-cluster"] ? { redisCluster: f["redis-cluster"] } : {}),
    };
    const { runDaemon } = await import("../../../admin-api/daemon.js");
    // runDaemon keeps the process alive (the gRPC server) and exits it on SIGINT/SIGTERM.
    const server = await runDaemon(settings);
    return { listen, port: server.port, metricsPort: server.metricsPort, tls: !settings.insecureDev, auditLog: settings.auditLog };
  }
}
