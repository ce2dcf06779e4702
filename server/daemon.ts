import { randomBytes } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { keyspaceReplication, type CassandraOptions, type TopologyConfig } from "../core/index.js";
import type { DaemonSettings, StoreTlsSettings } from "./daemon-settings.js";
import { LISTENERS, type ListenerOptions } from "./listeners.js";
import { serverLog } from "./log.js";
import { packageVersion } from "./version.js";
import { startAdminServer, STOP_REDIS_GRACE_MS, type AdminServer } from "./node.js";

export { DAEMON_DEFAULTS, parseDuration, toDaemonSettings, type DaemonSettings } from "./daemon-settings.js";

const readPem = async (file: string) => (await readFile(file)).toString("utf8");

/** A store's TLS settings (file paths) as the PEM text its client takes. */
async function tlsPems(t: StoreTlsSettings): Promise<{ caPem?: string; certPem?: string; keyPem?: string; servername?: string }> {
  return {
    ...(t.ca ? { caPem: await readPem(t.ca) } : {}),
    ...(t.cert ? { certPem: await readPem(t.cert) } : {}),
    ...(t.key ? { keyPem: await readPem(t.key) } : {}),
    ...(t.servername ? { servername: t.servername } : {}),
  };
}

/** Where the engine's Redis is and how to reach it: addresses, ACL credentials, TLS (PEM read from the settings' files). */
export async function topologyOf(s: Pick<DaemonSettings, "redis" | "redisCluster" | "redisUser" | "redisPassword" | "redisTls"> & Partial<Pick<DaemonSettings, "redisAckReplicas" | "redisAckTimeoutMs">>): Promise<TopologyConfig> {
  const security = {
    ...(s.redisPassword !== undefined ? { auth: { password: s.redisPassword, ...(s.redisUser !== undefined ? { username: s.redisUser } : {}) } } : {}),
    ...(s.redisTls ? { tls: await tlsPems(s.redisTls) } : {}),
    // issue 26: an acknowledgement waits for this many replicas (redis.ack_replicas)
    ...(s.redisAckReplicas ? { ack: { replicas: s.redisAckReplicas, timeoutMs: s.redisAckTimeoutMs ?? 1000 } } : {}),
  };
  if (s.redisCluster) return { kind: "cluster", seeds: s.redisCluster, ...security };
  return { kind: "instances", addrs: s.redis ?? [], ...security };
}

/** The authority's options from the --cassandra-* settings, or undefined for the Redis-hash fallback. */
export async function cassandraOf(s: DaemonSettings): Promise<CassandraOptions | undefined> {
  if (!s.cassandraContactPoints || s.cassandraContactPoints.length === 0) return undefined;
  return {
    contactPoints: s.cassandraContactPoints,
    ...(s.cassandraLocalDc ? { localDataCenter: s.cassandraLocalDc } : {}),
    ...(s.cassandraKeyspace ? { keyspace: s.cassandraKeyspace } : {}),
    ...(s.cassandraConsistency ? { consistency: s.cassandraConsistency } : {}),
    replication: keyspaceReplication({
      replicationClass: s.cassandraReplicationClass, replicationFactor: s.cassandraReplicationFactor,
      ...(s.cassandraReplicationDc ?? s.cassandraLocalDc ? { dataCenter: (s.cassandraReplicationDc ?? s.cassandraLocalDc)! } : {}),
    }),
    ...(s.cassandraUser !== undefined && s.cassandraPassword !== undefined ? { credentials: { username: s.cassandraUser, password: s.cassandraPassword } } : {}),
    ...(s.cassandraTls ? { tls: await tlsPems(s.cassandraTls) } : {}),
  };
}

/** The file in the data directory that keeps a generated node id across restarts. */
export const NODE_ID_FILE = "node-id";

/**
 * The node id: the setting, else the one kept in <dataDir>/node-id, else a new one written there
 * (exclusively: of two servers started at once on one data directory, one writes, both read it).
 */
export async function nodeIdOf(s: Pick<DaemonSettings, "nodeId" | "dataDir">): Promise<string> {
  if (s.nodeId) return s.nodeId;
  const file = join(s.dataDir, NODE_ID_FILE);
  await mkdir(s.dataDir, { recursive: true });
  await writeFile(file, `node-${randomBytes(4).toString("hex")}\n`, { flag: "wx" }).catch((err: NodeJS.ErrnoException) => {
    if (err.code !== "EEXIST") throw err;
  });
  const id = (await readFile(file, "utf8")).trim();
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(id)) throw new Error(`${file}: not a node id (${JSON.stringify(id.slice(0, 70))}); delete it to generate a new one, or give --node-id`);
  return id;
}


/**
 * The longest a SIGINT/SIGTERM stop may take before the process exits anyway (exit 1): a stop whose
 * Redis does not answer ends its waits on it after STOP_REDIS_GRACE_MS; this bounds a stop that is
 * slow on a Redis that answers, and anything else that could hold it.
 */
export const STOP_DEADLINE_MS = 6 * STOP_REDIS_GRACE_MS;

/** Starts a server from resolved settings (settings/resolve.ts checked them) and stops it cleanly on SIGINT/SIGTERM. */
export async function runDaemon(s: DaemonSettings): Promise<AdminServer> {
  const cassandra = await cassandraOf(s);
  // each listener's options from its settings (server/listeners/<name>/settings.ts), its certificates read
  const listeners = Object.assign({}, ...await Promise.all(LISTENERS.map((l) => l.settings.options(s)))) as ListenerOptions;
  // the handlers are installed when every listener is open (onListening), before start-up returns
  let started!: (server: AdminServer) => void;
  const ready = new Promise<AdminServer>((resolve) => { started = resolve; });
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    serverLog(`${signal}: shutting down`);
    // the last resort: whatever a stop still waits on (its waits on Redis end at STOP_REDIS_GRACE_MS), the process exits
    setTimeout(() => {
      serverLog(`${signal}: the shutdown did not finish within ${STOP_DEADLINE_MS} ms: exiting without it`);
      process.exit(1);
    }, STOP_DEADLINE_MS).unref();
    ready.then((server) => server.close()).then(() => process.exit(0), (err: unknown) => { serverLog(`shutdown failed: ${String(err)}`); process.exit(1); });
  };
  const server = await startAdminServer({
    onListening: () => {
      process.once("SIGINT", () => stop("SIGINT"));
      process.once("SIGTERM", () => stop("SIGTERM"));
    },
    ...listeners,
    topology: await topologyOf(s),
    auditPath: s.auditLog,
    auditSync: s.auditFsync,
    auditRotation: s.auditMaxBytes > 0 ? { maxBytes: s.auditMaxBytes, keep: s.auditKeep } : null,
    insecureDev: s.insecureDev,
    ...(s.denyList ? { denyList: s.denyList } : {}),
    ...(s.tokenKeys ? { tokenKeys: s.tokenKeys } : {}),
    dispatch: { clusterId: s.clusterId, topicId: "dispatch", partitionCount: s.partitions },
    retentionMs: s.dispatchRetentionMs,
    unreadAuditIntervalMs: s.unreadAuditIntervalMs,
    retentionIntervalMs: s.retentionIntervalMs,
    roomMsgRate: s.roomMsgRate,
    roomFlushSharePercent: s.roomFlushSharePercent,
    engine: { maxGroupMembers: s.groupsMaxMembers },
    // every engine server is a node of the cluster; the node RPC address comes with node.listen
    cluster: { nodeId: await nodeIdOf(s), address: "", version: packageVersion(), leaseTtlMs: s.clusterLeaseTtlMs, heartbeatIntervalMs: s.clusterHeartbeatIntervalMs, units: s.clusterUnits },
    // the CMD pending buffer is saved at a graceful stop to <data_dir>/conversationv2/
    cmd: { dataDir: s.dataDir },
    ...(cassandra ? { cassandra } : {}),
    ...(s.insecureDev ? {} : { tls: { caPem: await readFile(s.tlsCa!), certPem: await readFile(s.tlsCert!), keyPem: await readFile(s.tlsKey!) } }),
  });
  started(server);
  // SIGHUP re-reads the deny list (it is also polled every second); without one, SIGHUP keeps its
  // default action
  if (s.denyList) process.on("SIGHUP", () => void server.reloadDenyList("SIGHUP"));
  return server;
}
