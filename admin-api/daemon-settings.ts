// Kept free of engine and gRPC imports: the CLI reads these for `server start --help` without
// loading the server.

/** Settings of a server process, from flags (`qim-admin-server`, `qimctl server start`) or env. */
export interface DaemonSettings {
  listen: string;
  metricsListen: string | null;
  tlsCa?: string;
  tlsCert?: string;
  tlsKey?: string;
  insecureDev: boolean;
  auditLog: string;
  /** fdatasync the audit log before answering (on by default). */
  auditFsync: boolean;
  /** Comma list of host:port; overrides QIM_REDIS_ADDR / QIM_MESSAGE_STORE_ADDRS. */
  redis?: string;
  redisCluster?: string;
  partitions: number;
  clusterId: string;
}

export const DAEMON_DEFAULTS = {
  listen: "127.0.0.1:7443",
  metricsListen: "127.0.0.1:9464",
  auditLog: ".qim/audit.log",
  partitions: 8,
  clusterId: "qim",
} as const;
