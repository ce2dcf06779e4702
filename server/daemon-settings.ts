// Kept free of engine and gRPC imports: the CLI reads these for `server start --help` without
// loading the server. The settings themselves are declared once, in settings/schema.ts.
import { dirname } from "node:path";
import { LISTENERS, type ListenerDaemonSettings } from "./listeners.js";
import { readSecret, type ResolvedSettings } from "./settings/resolve.js";

export { DAEMON_DEFAULTS } from "./settings/schema.js";
export { parseDuration } from "./settings/resolve.js";

/** TLS to a store: on/off, PEM file paths, the name its certificates must carry. */
export interface StoreTlsSettings {
  ca?: string;
  cert?: string;
  key?: string;
  servername?: string;
}

/** Settings of a server process (`qim-node`, `qimctl server start`), resolved from flags, environment, config file and defaults: the node's own and each listener's (server/listeners/<name>/settings.ts). */
export type DaemonSettings = BaseDaemonSettings & ListenerDaemonSettings;

/** The node's own settings, apart from its listeners'. */
export interface BaseDaemonSettings {
  /** The node's certificate (the admin PKI): the admin gRPC and the application servers' HTTP API present it. */
  tlsCa?: string;
  tlsCert?: string;
  tlsKey?: string;
  insecureDev: boolean;
  auditLog: string;
  /** fdatasync the audit log before answering (on by default). */
  auditFsync: boolean;
  /** Rotate the audit log before a record would take it past this many bytes (0: never). */
  auditMaxBytes: number;
  /** Rotated audit log files kept. */
  auditKeep: number;
  /**
   * Deny list of revoked client certificates: one SHA-256 fingerprint per line, `#` comments;
   * polled every second and reloaded on SIGHUP (docs/operator-guide.md "Revoking a certificate").
   */
  denyList?: string;
  /** The device tokens' key file (tokens.keys): a JSON Web Key Set, newest key first (docs/operator-guide.md "Device tokens"). */
  tokenKeys?: string;
  /** Standalone instances in routing order (host:port, redis://, rediss://). */
  redis?: string[];
  /** Redis Cluster seeds (instead of redis). */
  redisCluster?: string[];
  redisUser?: string;
  /** The password's value (from its file or the environment); never printed. */
  redisPassword?: string;
  /** Present when TLS to Redis is on. */
  redisTls?: StoreTlsSettings;
  /** Replicas that must confirm a commit before it is acknowledged (redis.ack_replicas; 0: none). */
  redisAckReplicas: number;
  /** How long an acknowledgement waits for them, in ms (redis.ack_timeout). */
  redisAckTimeoutMs: number;
  partitions: number;
  clusterId: string;
  /** Cassandra host[:port] list: the conversation-set authority (else the Redis-hash fallback). */
  cassandraContactPoints?: string[];
  cassandraLocalDc?: string;
  cassandraKeyspace?: string;
  /** e.g. LOCAL_QUORUM (the default), QUORUM, ONE. */
  cassandraConsistency?: string;
  /** cassandra.replication_class / _factor (defaults SimpleStrategy, 1) and _dc (NetworkTopologyStrategy's data center). */
  cassandraReplicationClass: string;
  cassandraReplicationFactor: number;
  cassandraReplicationDc?: string;
  cassandraUser?: string;
  cassandraPassword?: string;
  cassandraTls?: StoreTlsSettings;
  /** Dispatch-log retention in ms (0: never trimmed). */
  dispatchRetentionMs: number;
  /** The server's state files (node-id); the audit log's directory unless set. */
  dataDir: string;
  /** The node id in the engine cluster; unset: the one kept in <dataDir>/node-id (generated once). */
  nodeId?: string;
  clusterLeaseTtlMs: number;
  clusterHeartbeatIntervalMs: number;
  /** The background unread audit's step interval in ms (conversation_list.unread_audit_interval; 0: off). */
  unreadAuditIntervalMs: number;
  /** The retention task's round interval in ms (retention.interval; 0: off). */
  retentionIntervalMs: number;
  roomMsgRate: number;
  roomFlushSharePercent: number;
  /** The most current members a group may have (groups.max_members). */
  groupsMaxMembers: number;
  /** The kinds of units this node takes (cluster.units): relay, partition, slot. */
  clusterUnits: ("relay" | "partition" | "slot" | "room")[];
}

function tlsOf(r: ResolvedSettings, store: "redis" | "cassandra"): StoreTlsSettings | undefined {
  const v = (k: string) => r.values.get(`${store}.tls.${k}`) as string | undefined;
  const addrs = store === "redis" ? ((r.values.get("redis.addrs") ?? r.values.get("redis.cluster")) as string[] | undefined) ?? [] : [];
  const on = r.values.get(`${store}.tls.enabled`) === true || ["ca", "cert", "key", "servername"].some((k) => v(k) !== undefined)
    || addrs.some((a) => /^rediss:\/\//i.test(a.trim()));
  if (!on) return undefined;
  return {
    ...(v("ca") !== undefined ? { ca: v("ca")! } : {}),
    ...(v("cert") !== undefined ? { cert: v("cert")! } : {}),
    ...(v("key") !== undefined ? { key: v("key")! } : {}),
    ...(v("servername") !== undefined ? { servername: v("servername")! } : {}),
  };
}

/** The typed view of resolved settings (reads the password files). */
export function toDaemonSettings(r: ResolvedSettings): DaemonSettings {
  const v = <T>(k: string) => r.values.get(k) as T | undefined;
  const opt = <T>(name: string, k: string) => (r.values.has(k) ? { [name]: v<T>(k) } : {});
  const redisPassword = readSecret(r, "redis");
  const cassandraPassword = readSecret(r, "cassandra");
  const redisTls = tlsOf(r, "redis");
  const cassandraTls = tlsOf(r, "cassandra");
  const base: BaseDaemonSettings = {
    insecureDev: v<boolean>("insecure_dev") === true,
    auditLog: v<string>("audit.log")!,
    auditFsync: v<boolean>("audit.fsync") !== false,
    auditMaxBytes: v<number>("audit.max_size")!,
    auditKeep: v<number>("audit.keep")!,
    partitions: v<number>("dispatch.partitions")!,
    clusterId: v<string>("dispatch.cluster_id")!,
    dispatchRetentionMs: v<number>("dispatch.retention")!,
    unreadAuditIntervalMs: v<number>("conversation_list.unread_audit_interval")!,
    retentionIntervalMs: v<number>("retention.interval")!,
    roomMsgRate: v<number>("rooms.msg_rate")!,
    roomFlushSharePercent: v<number>("rooms.flush_share_percent")!,
    groupsMaxMembers: v<number>("groups.max_members")!,
    redisAckReplicas: v<number>("redis.ack_replicas")!,
    redisAckTimeoutMs: v<number>("redis.ack_timeout")!,
    dataDir: v<string>("data_dir") ?? dirname(v<string>("audit.log")!),
    clusterLeaseTtlMs: v<number>("cluster.lease_ttl")!,
    clusterHeartbeatIntervalMs: v<number>("cluster.heartbeat_interval")!,
    clusterUnits: v<("relay" | "partition" | "slot" | "room")[]>("cluster.units")!,
    ...opt("nodeId", "node.id"),
    ...opt("tlsCa", "tls.ca"),
    ...opt("tlsCert", "tls.cert"),
    ...opt("tlsKey", "tls.key"),
    ...opt("denyList", "deny_list"),
    ...opt("tokenKeys", "tokens.keys"),
    ...opt("redis", "redis.addrs"),
    ...opt("redisCluster", "redis.cluster"),
    ...opt("redisUser", "redis.user"),
    ...(redisPassword !== undefined ? { redisPassword } : {}),
    ...(redisTls ? { redisTls } : {}),
    ...opt("cassandraContactPoints", "cassandra.contact_points"),
    ...opt("cassandraLocalDc", "cassandra.local_dc"),
    ...opt("cassandraKeyspace", "cassandra.keyspace"),
    ...opt("cassandraConsistency", "cassandra.consistency"),
    cassandraReplicationClass: v<string>("cassandra.replication_class")!,
    cassandraReplicationFactor: v<number>("cassandra.replication_factor")!,
    ...opt("cassandraReplicationDc", "cassandra.replication_dc"),
    ...opt("cassandraUser", "cassandra.user"),
    ...(cassandraPassword !== undefined ? { cassandraPassword } : {}),
    ...(cassandraTls ? { cassandraTls } : {}),
  } as BaseDaemonSettings;
  return Object.assign(base, ...LISTENERS.map((l) => l.settings.typed(r))) as DaemonSettings;
}
