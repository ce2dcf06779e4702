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
  /**
   * Deny list of revoked client certificates: one SHA-256 fingerprint per line, `#` comments;
   * polled every second and reloaded on SIGHUP (docs/operator-guide.md "Revoking a certificate").
   */
  denyList?: string;
  /** Comma list of host:port; overrides QIM_REDIS_ADDR / QIM_MESSAGE_STORE_ADDRS. */
  redis?: string;
  redisCluster?: string;
  partitions: number;
  clusterId: string;
  /** Comma list of Cassandra host[:port]: the conversation-set authority (else the Redis-hash fallback). */
  cassandraContactPoints?: string;
  cassandraLocalDc?: string;
  cassandraKeyspace?: string;
  /** e.g. LOCAL_QUORUM (the default), QUORUM, ONE. */
  cassandraConsistency?: string;
  /** Dispatch-log retention in ms (0: never trimmed). */
  dispatchRetentionMs: number;
}

export const DAEMON_DEFAULTS = {
  listen: "127.0.0.1:7443",
  metricsListen: "127.0.0.1:9464",
  auditLog: ".qim/audit.log",
  partitions: 8,
  clusterId: "qim",
  dispatchRetention: "1d",
} as const;

const UNIT_MS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/**
 * A duration such as 90s, 30m, 6h or 1d (also ms; a bare number is seconds) in milliseconds;
 * "off" (or 0) is 0: the dispatch log is never trimmed. Throws an Error that says what it expects.
 */
export function parseDuration(text: string): number {
  const t = text.trim().toLowerCase();
  if (t === "off" || t === "0") return 0;
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(t);
  const ms = m ? Math.round(Number(m[1]) * UNIT_MS[(m[2] ?? "s") as keyof typeof UNIT_MS]) : NaN;
  if (!Number.isSafeInteger(ms) || ms < 1000 || ms > 365 * UNIT_MS.d) {
    throw new Error(`expected a duration from 1s to 365d such as 90s, 30m, 6h or 1d (or off), got ${JSON.stringify(text.slice(0, 32))}`);
  }
  return ms;
}

/** The Cassandra flags make sense only with contact points; returns the problem, if any. */
export function cassandraSettingsProblem(s: Pick<DaemonSettings, "cassandraContactPoints" | "cassandraLocalDc" | "cassandraKeyspace" | "cassandraConsistency">): { flag: string; message: string } | null {
  if (s.cassandraContactPoints !== undefined && s.cassandraContactPoints.split(",").map((x) => x.trim()).filter(Boolean).length === 0) {
    return { flag: "--cassandra-contact-points", message: "give at least one host[:port]" };
  }
  if (s.cassandraContactPoints) return null;
  for (const [flag, v] of [["--cassandra-local-dc", s.cassandraLocalDc], ["--cassandra-keyspace", s.cassandraKeyspace], ["--cassandra-consistency", s.cassandraConsistency]] as const) {
    if (v !== undefined) return { flag, message: "needs --cassandra-contact-points (without it the Redis-hash development fallback is the authority)" };
  }
  return null;
}
