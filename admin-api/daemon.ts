import { readFile } from "node:fs/promises";
import { topologyFromEnv, type TopologyConfig } from "../core/index.js";
import { cassandraSettingsProblem, type DaemonSettings } from "./daemon-settings.js";
import { startAdminServer, type AdminServer } from "./server.js";

export { DAEMON_DEFAULTS, parseDuration, type DaemonSettings } from "./daemon-settings.js";

export function topologyOf(s: Pick<DaemonSettings, "redis" | "redisCluster">): TopologyConfig {
  if (s.redisCluster) return { kind: "cluster", seeds: s.redisCluster.split(",").map((x) => x.trim()).filter(Boolean) };
  if (s.redis) return { kind: "instances", addrs: s.redis.split(",").map((x) => x.trim()).filter(Boolean) };
  return topologyFromEnv();
}

/** Starts a server from settings and stops it cleanly on SIGINT/SIGTERM. */
export async function runDaemon(s: DaemonSettings): Promise<AdminServer> {
  if (s.insecureDev && s.denyList) throw new Error("--deny-list needs mTLS: --insecure-dev has no client certificates to refuse");
  if (!s.insecureDev && (!s.tlsCa || !s.tlsCert || !s.tlsKey)) {
    throw new Error("mTLS needs --tls-ca, --tls-cert and --tls-key (create them with `qimctl certs init` and `qimctl certs issue-server`), or --insecure-dev for a development machine");
  }
  const cassandraProblem = cassandraSettingsProblem(s);
  if (cassandraProblem) throw new Error(`${cassandraProblem.flag}: ${cassandraProblem.message}`);
  const contactPoints = (s.cassandraContactPoints ?? "").split(",").map((x) => x.trim()).filter(Boolean);
  const server = await startAdminServer({
    topology: topologyOf(s),
    listen: s.listen,
    metricsListen: s.metricsListen,
    auditPath: s.auditLog,
    auditSync: s.auditFsync,
    insecureDev: s.insecureDev,
    ...(s.denyList ? { denyList: s.denyList } : {}),
    dispatch: { clusterId: s.clusterId, topicId: "dispatch", partitionCount: s.partitions },
    retentionMs: s.dispatchRetentionMs,
    ...(contactPoints.length > 0 ? {
      cassandra: {
        contactPoints,
        ...(s.cassandraLocalDc ? { localDataCenter: s.cassandraLocalDc } : {}),
        ...(s.cassandraKeyspace ? { keyspace: s.cassandraKeyspace } : {}),
        ...(s.cassandraConsistency ? { consistency: s.cassandraConsistency } : {}),
      },
    } : {}),
    ...(s.insecureDev ? {} : { tls: { caPem: await readFile(s.tlsCa!), certPem: await readFile(s.tlsCert!), keyPem: await readFile(s.tlsKey!) } }),
  });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    process.stderr.write(`${signal}: shutting down\n`);
    server.close().then(() => process.exit(0), (err: unknown) => { process.stderr.write(`shutdown failed: ${String(err)}\n`); process.exit(1); });
  };
  // SIGHUP re-reads the deny list (it is also polled every second); without one, SIGHUP keeps its
  // default action
  if (s.denyList) process.on("SIGHUP", () => void server.reloadDenyList("SIGHUP"));
  process.once("SIGINT", () => stop("SIGINT"));
  process.once("SIGTERM", () => stop("SIGTERM"));
  return server;
}
