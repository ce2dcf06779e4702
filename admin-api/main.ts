#!/usr/bin/env node
import { Command, InvalidArgumentError, Option } from "commander";
import { DAEMON_DEFAULTS, parseDuration, runDaemon, type DaemonSettings } from "./daemon.js";

const positive = (v: string) => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 999) throw new InvalidArgumentError("an integer from 1 to 999");
  return n;
};

const duration = (v: string) => {
  try {
    return parseDuration(v);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
};

const program = new Command("qim-admin-server")
  .description("The QIM admin API: gRPC over mTLS (client certificates required), backed by the embedded engine on Redis.")
  .addOption(new Option("--listen <host:port>", "gRPC address").default(DAEMON_DEFAULTS.listen))
  .addOption(new Option("--metrics-listen <host:port>", "plain-HTTP /metrics address ('off' to disable)").default(DAEMON_DEFAULTS.metricsListen))
  .addOption(new Option("--tls-ca <file>", "CA certificate that client certificates must chain to").env("QIM_TLS_CA"))
  .addOption(new Option("--tls-cert <file>", "server certificate").env("QIM_TLS_CERT"))
  .addOption(new Option("--tls-key <file>", "server private key").env("QIM_TLS_KEY"))
  .addOption(new Option("--insecure-dev", "plaintext, no client certificates, every caller admin (development only)").default(false))
  .addOption(new Option("--audit-log <file>", "append-only audit log").default(DAEMON_DEFAULTS.auditLog).env("QIM_AUDIT_LOG"))
  .addOption(new Option("--deny-list <file>", "revoked client certificates: one SHA-256 fingerprint per line (# comments); polled every second and reloaded on SIGHUP").env("QIM_DENY_LIST"))
  .addOption(new Option("--no-audit-fsync", "answer once the audit entry is written to the OS, without waiting for fdatasync"))
  .addOption(new Option("--redis <addrs>", "comma list of Redis host:port (default: QIM_REDIS_ADDR + QIM_MESSAGE_STORE_ADDRS)"))
  .addOption(new Option("--redis-cluster <seeds>", "comma list of Redis Cluster seed host:port (default: QIM_REDIS_CLUSTER_SEEDS)"))
  .addOption(new Option("--partitions <n>", "dispatch log partitions").default(DAEMON_DEFAULTS.partitions).argParser(positive))
  .addOption(new Option("--cluster-id <id>", "dispatch log cluster id").default(DAEMON_DEFAULTS.clusterId))
  .addOption(new Option("--dispatch-retention <duration>", "how long the dispatch log keeps records, e.g. 90s, 30m, 6h, 1d ('off': never trimmed)").default(DAEMON_DEFAULTS.dispatchRetention).argParser(duration))
  .addOption(new Option("--cassandra-contact-points <hosts>", "comma list of Cassandra host[:port]: the conversation-set authority (default: the Redis-hash development fallback)").env("QIM_CASSANDRA_CONTACT_POINTS"))
  .addOption(new Option("--cassandra-local-dc <dc>", "Cassandra local data center (default datacenter1)").env("QIM_CASSANDRA_LOCAL_DC"))
  .addOption(new Option("--cassandra-keyspace <name>", "Cassandra keyspace (default qim; created if missing)").env("QIM_CASSANDRA_KEYSPACE"))
  .addOption(new Option("--cassandra-consistency <level>", "Cassandra consistency, e.g. LOCAL_QUORUM (default), QUORUM, ONE").env("QIM_CASSANDRA_CONSISTENCY"))
  .addHelpText("after", `
Examples:
  qim-admin-server --tls-ca ca.pem --tls-cert server.pem --tls-key server-key.pem --redis 127.0.0.1:6379
  QIM_REDIS_ADDR=10.0.0.5:6379 QIM_MESSAGE_STORE_ADDRS=10.0.0.6:6379,10.0.0.7:6379 qim-admin-server --tls-ca …
  qim-admin-server --tls-ca … --redis 10.0.0.5:6379 --cassandra-contact-points 10.0.1.1,10.0.1.2 --cassandra-local-dc dc1
  qim-admin-server --insecure-dev --redis 127.0.0.1:6379   # development only

Start-up fails (exit 2, nothing changed) when the session projection refuses the dispatch log: a
checkpoint beyond a partition's high watermark, or another cluster id / topic / partition count.`);

program.parse();
const o = program.opts<Record<string, unknown>>();
const settings: DaemonSettings = {
  listen: String(o.listen),
  metricsListen: o.metricsListen === "off" ? null : String(o.metricsListen),
  insecureDev: o.insecureDev === true,
  auditLog: String(o.auditLog),
  auditFsync: o.auditFsync !== false,
  partitions: Number(o.partitions),
  clusterId: String(o.clusterId),
  dispatchRetentionMs: typeof o.dispatchRetention === "number" ? o.dispatchRetention : parseDuration(String(o.dispatchRetention)),
  ...(o.cassandraContactPoints !== undefined ? { cassandraContactPoints: String(o.cassandraContactPoints) } : {}),
  ...(o.cassandraLocalDc !== undefined ? { cassandraLocalDc: String(o.cassandraLocalDc) } : {}),
  ...(o.cassandraKeyspace !== undefined ? { cassandraKeyspace: String(o.cassandraKeyspace) } : {}),
  ...(o.cassandraConsistency !== undefined ? { cassandraConsistency: String(o.cassandraConsistency) } : {}),
  ...(o.denyList ? { denyList: String(o.denyList) } : {}),
  ...(o.tlsCa ? { tlsCa: String(o.tlsCa) } : {}),
  ...(o.tlsCert ? { tlsCert: String(o.tlsCert) } : {}),
  ...(o.tlsKey ? { tlsKey: String(o.tlsKey) } : {}),
  ...(o.redis ? { redis: String(o.redis) } : {}),
  ...(o.redisCluster ? { redisCluster: String(o.redisCluster) } : {}),
};
runDaemon(settings).catch((err: unknown) => {
  process.stderr.write(`qim-admin-server: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(2);
});
