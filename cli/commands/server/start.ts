import { accessSync, constants } from "node:fs";
import { Flags } from "@oclif/core";
import { DAEMON_DEFAULTS, type DaemonSettings } from "../../../admin-api/daemon-settings.js";
import { BaseCommand } from "../../base.js";
import { UsageError } from "../../exit-codes.js";
import { endpoint as checkEndpoint } from "../../validate.js";

export interface ServerStartResult {
  listen: string;
  port: number;
  metricsPort: number | null;
  tls: boolean;
  auditLog: string;
}

export default class ServerStart extends BaseCommand<typeof ServerStart> {
  static override summary = "Run the admin API server in the foreground (the same code as qim-admin-server).";
  static override description = `gRPC over TLS with required client certificates: the principal is the certificate's subject CN, its role the OU (admin, operator, viewer, drill). Backed by the embedded engine on Redis (--redis, --redis-cluster, or QIM_REDIS_ADDR + QIM_MESSAGE_STORE_ADDRS). Every mutating and every refused call goes to the append-only --audit-log before the answer returns. Prometheus metrics on plain HTTP at --metrics-listen (/metrics). Stops cleanly on SIGINT/SIGTERM.

--insecure-dev serves plaintext, without client certificates, every caller an admin: development machines only.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --tls-ca .qim/pki/ca.crt --tls-cert .qim/pki/server.crt --tls-key .qim/pki/server.key --redis 127.0.0.1:6379",
    "QIM_REDIS_ADDR=10.0.0.5:6379 QIM_MESSAGE_STORE_ADDRS=10.0.0.6:6379 <%= config.bin %> <%= command.id %> --listen 0.0.0.0:7443 --tls-ca ca.crt --tls-cert server.crt --tls-key server.key",
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
    "audit-fsync": Flags.boolean({ default: true, allowNo: true, description: "fdatasync the audit log before answering (--no-audit-fsync: written to the OS only)" }),
    redis: Flags.string({ description: "comma list of Redis host:port (default: QIM_REDIS_ADDR + QIM_MESSAGE_STORE_ADDRS)" }),
    "redis-cluster": Flags.string({ description: "comma list of Redis Cluster seed host:port (default: QIM_REDIS_CLUSTER_SEEDS)" }),
    partitions: Flags.integer({ default: DAEMON_DEFAULTS.partitions, min: 1, max: 999, description: "dispatch log partitions" }),
    "cluster-id": Flags.string({ default: DAEMON_DEFAULTS.clusterId, description: "dispatch log cluster id" }),
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
    const settings: DaemonSettings = {
      listen,
      metricsListen,
      insecureDev: f["insecure-dev"],
      auditLog: f["audit-log"],
      auditFsync: f["audit-fsync"],
      partitions: f.partitions,
      clusterId: f["cluster-id"],
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
