// The one declaration of a server process's settings: the config file's keys, the flags of
// qim-node (qim-admin-server) and `qimctl server start`, the environment variables, the validation, the
// redaction of --print-config and docs/config-reference.md all come from this list, with each
// listener's entries from its folder (server/listeners.ts). Kept free of
// engine and gRPC imports: the CLI reads it for `server start --help` without loading the server.
import { ROOM_FLUSH_SHARE_PERCENT, ROOM_MSG_RATE } from "../../core/base/index.js";
import { LISTENER_DEFAULTS, LISTENERS } from "../listeners.js";

/** What a setting holds; each kind has one parser (resolve.ts) and one way it is shown. */
export type SettingKind =
  | "address" // host:port (port 0: any free port)
  | "address-or-off" // host:port, or off
  | "redis-addresses" // list of host:port, redis://host:port, rediss://host:port
  | "addresses" // list of host[:port]
  | "boolean"
  | "integer"
  | "duration" // 90s, 30m, 6h, 1d, off
  | "size" // bytes: 64MiB, 512KiB, 1GiB, 100MB, 4096, off
  | "string"
  | "path" // a file that may not exist yet (written by the server)
  | "file" // a file that must be readable at start-up
  | "secret" // a password: config file or environment only, never a flag, never printed
  | "enum"
  | "enum-list" // one or more of values, comma-separated or a YAML list
  | "uuid"; // canonical UUID text

export type SettingSection = "server" | "audit" | "redis" | "dispatch" | "conversation_list" | "groups" | "retention" | "rooms" | "cluster" | "sync" | "gateway" | "cassandra";

export interface SettingSpec {
  /** Dotted path in the config file, e.g. redis.tls.ca. */
  key: string;
  kind: SettingKind;
  section: SettingSection;
  /** The flag without dashes; null for a secret (a value on the command line shows in `ps`). */
  flag: string | null;
  /** Environment variable(s); several are joined with commas (QIM_REDIS_ADDR + QIM_MESSAGE_STORE_ADDRS). */
  env: readonly string[];
  description: string;
  /** The value when no source gives one; absent: unset. */
  default?: string | number | boolean;
  /** integer: inclusive range. */
  min?: number;
  max?: number;
  /** enum, enum-list: the accepted values. */
  values?: readonly string[];
  /** Shown as <redacted> by --print-config (a password; a file's contents are never shown, its path is). */
  secret?: boolean;
}

/** Default settings that other modules show (the CLI's help, the dev stack). */
export const DAEMON_DEFAULTS = {
  // each listener's (server/listeners/<name>/settings.ts)
  ...LISTENER_DEFAULTS,
  auditLog: ".qim/audit.log",
  auditMaxSize: "64MiB",
  auditKeep: 10,
  partitions: 8,
  clusterId: "qim",
  dispatchRetention: "1d",
  /** core/cluster DEFAULT_LEASE_TTL_MS and DEFAULT_HEARTBEAT_INTERVAL_MS (this file imports no engine code; test/admin-api/settings.test.ts holds them equal). */
  clusterLeaseTtl: "5s",
  clusterHeartbeatInterval: "1s",
  /** core/conversation-list UNREAD_AUDIT_INTERVAL_MS (held equal by test/admin-api/settings.test.ts). */
  unreadAuditInterval: "10s",
  /** core/conversation DEFAULT_MAX_GROUP_MEMBERS (held equal by test/admin-api/settings.test.ts). */
  groupsMaxMembers: 1_000_000,
  /** core/cassandra CASSANDRA_DEFAULT_REPLICATION_CLASS and _FACTOR (held equal by test/admin-api/settings.test.ts). */
  cassandraReplicationClass: "SimpleStrategy",
  cassandraReplicationFactor: 1,
  /** core/runtime DEFAULT_RETENTION_INTERVAL_MS (issue 26). */
  retentionInterval: "1m",
} as const;

export const CASSANDRA_CONSISTENCIES = ["ANY", "ONE", "TWO", "THREE", "QUORUM", "ALL", "LOCAL_QUORUM", "EACH_QUORUM", "LOCAL_ONE"] as const;
/** core/cassandra CASSANDRA_REPLICATION_CLASSES and CASSANDRA_MAX_REPLICATION_FACTOR (held equal by test/admin-api/settings.test.ts). */
export const CASSANDRA_REPLICATION_CLASSES = ["SimpleStrategy", "NetworkTopologyStrategy"] as const;
export const CASSANDRA_MAX_REPLICATION_FACTOR = 9;

const flagOf = (key: string) => key.replace(/[._]/g, "-");
const envOf = (key: string) => `QIM_${key.replace(/\./g, "_").toUpperCase()}`;

/** A setting as declared: its flag and environment variable derive from its key unless given. */
export type SettingDecl = Omit<SettingSpec, "flag" | "env" | "section"> & { flag?: string | null; env?: readonly string[] };
type Spec = SettingDecl;

function section(name: SettingSection, specs: Spec[]): SettingSpec[] {
  return specs.map((s) => ({
    ...s,
    section: name,
    flag: s.kind === "secret" ? null : (s.flag === undefined ? flagOf(s.key) : s.flag),
    env: s.env ?? [envOf(s.key)],
  }));
}

/** The TLS settings of a store: on/off, CA, client certificate and key, server name. */
function storeTls(store: "redis" | "cassandra", text: { enabled: string; servers: string; cert: string; host: string }): Spec[] {
  return [
    { key: `${store}.tls.enabled`, kind: "boolean", flag: `${store}-tls`, default: false, description: text.enabled },
    { key: `${store}.tls.ca`, kind: "file", description: `CA certificate (PEM) of ${text.servers} (default: the system's CAs)` },
    { key: `${store}.tls.cert`, kind: "file", description: `client certificate (PEM), ${text.cert}` },
    { key: `${store}.tls.key`, kind: "file", description: "client private key (PEM)" },
    { key: `${store}.tls.servername`, kind: "string", description: `the name the ${store === "redis" ? "Redis" : "Cassandra"} certificates must carry (default: ${text.host})` },
  ];
}

/** The sections in the order --help, --print-config and the reference show them. */
const SECTION_ORDER: readonly SettingSection[] = ["server", "audit", "redis", "dispatch", "conversation_list", "groups", "retention", "rooms", "cluster", "sync", "gateway", "cassandra"];

/** The settings of the node itself with each listener's entries placed where it says (first in its section, or after a key). */
function withListeners(base: readonly SettingSpec[]): SettingSpec[] {
  const out = [...base];
  for (const l of LISTENERS) {
    for (const part of l.settings.specs) {
      const specs = section(part.section, [...part.specs]);
      const first = out.findIndex((s) => s.section === part.section);
      const at = part.after === null ? (first < 0 ? out.length : first) : out.findIndex((s) => s.key === part.after) + 1;
      if (at === 0 && part.after !== null) throw new Error(`listener ${l.name}: no setting ${part.after} to follow`);
      out.splice(at, 0, ...specs);
    }
  }
  const rank = (s: SettingSpec) => SECTION_ORDER.indexOf(s.section);
  return out.map((s, i) => ({ s, i })).sort((a, b) => rank(a.s) - rank(b.s) || a.i - b.i).map(({ s }) => s);
}

/** Every setting, in the order --help, --print-config and the reference show them. */
export const SETTINGS: readonly SettingSpec[] = withListeners([
  ...section("server", [
    { key: "tls.ca", kind: "file", description: "CA certificate (PEM) that client certificates must chain to" },
    { key: "tls.cert", kind: "file", description: "the server's certificate (PEM)" },
    { key: "tls.key", kind: "file", description: "the server's private key (PEM)" },
    { key: "insecure_dev", kind: "boolean", default: false, description: "plaintext, no client certificates, every caller an admin: development machines only, refused on a non-loopback --listen" },
    { key: "insecure_dev_allow_non_loopback", kind: "boolean", default: false, description: "let insecure_dev listen on a non-loopback address: anyone who reaches the port is an admin" },
    { key: "deny_list", kind: "file", description: "revoked client certificates: one SHA-256 fingerprint per line (# comments), polled every second and reloaded on SIGHUP" },
    { key: "tokens.keys", kind: "file", description: "device tokens' signing keys: a JSON Web Key Set file (qimctl token keygen), newest key first, at most 2; the newest signs, both verify; read again within a second when it changes (unset: no device tokens are issued or accepted)" },
    { key: "data_dir", kind: "path", description: "the server's own state files (node-id, …); default: the audit log's directory (.qim with the default audit log)" },
  ]),
  ...section("audit", [
    { key: "audit.log", kind: "path", default: DAEMON_DEFAULTS.auditLog, description: "append-only audit log" },
    { key: "audit.fsync", kind: "boolean", default: true, description: "fdatasync the audit log before answering (false: written to the OS only)" },
    { key: "audit.max_size", kind: "size", default: DAEMON_DEFAULTS.auditMaxSize, description: "rotate the audit log before a record would take it past this size: FILE becomes FILE.1, FILE.1 FILE.2 … (off: one file that grows)" },
    { key: "audit.keep", kind: "integer", min: 1, max: 1000, default: DAEMON_DEFAULTS.auditKeep, description: "rotated audit log files kept (FILE.1 … FILE.N); the oldest beyond them is deleted" },
  ]),
  ...section("redis", [
    { key: "redis.addrs", kind: "redis-addresses", flag: "redis", env: ["QIM_REDIS_ADDR", "QIM_MESSAGE_STORE_ADDRS"], description: "standalone instances in routing order: host:port, or rediss://host:port for TLS" },
    { key: "redis.cluster", kind: "redis-addresses", env: ["QIM_REDIS_CLUSTER_SEEDS"], description: "Redis Cluster seed nodes host:port (rediss:// for TLS); instead of redis.addrs" },
    { key: "redis.user", kind: "string", description: "ACL user (Redis 6+); without it a password is the legacy requirepass of the default user" },
    { key: "redis.password", kind: "secret", secret: true, description: "the password (environment or config file only; prefer redis.password_file)" },
    { key: "redis.password_file", kind: "file", description: "file holding the password (a trailing newline is ignored)" },
    ...storeTls("redis", { enabled: "TLS to every address (also on with rediss:// addresses or any redis.tls file)", servers: "the Redis servers", cert: "for tls-auth-clients yes", host: "each address's host" }),
    { key: "redis.ack_replicas", kind: "integer", min: 0, max: 16, default: 0, description: "replicas that must confirm a write (WAIT on the connection that ran the commit script) before a send, a membership change or a group's creation is acknowledged; a write not confirmed within redis.ack_timeout is answered UNAVAILABLE (retry with the same id). 0: acknowledged when the master has it — a master failover can lose it (docs/operator-guide.md, \"Acknowledgements and Redis failover\")" },
    { key: "redis.ack_timeout", kind: "duration", default: "1s", description: "how long an acknowledgement waits for redis.ack_replicas replicas (1s to 4s: below the store's 5 s command timeout)" },
  ]),
  ...section("dispatch", [
    { key: "dispatch.partitions", kind: "integer", flag: "partitions", min: 1, max: 999, default: DAEMON_DEFAULTS.partitions, description: "dispatch log partitions" },
    { key: "dispatch.cluster_id", kind: "string", flag: "cluster-id", default: DAEMON_DEFAULTS.clusterId, description: "dispatch log cluster id" },
    { key: "dispatch.retention", kind: "duration", flag: "dispatch-retention", default: DAEMON_DEFAULTS.dispatchRetention, description: "how long the dispatch log keeps records: 90s, 30m, 6h, 1d … (off: never trimmed)" },
  ]),
  ...section("conversation_list", [
    { key: "conversation_list.unread_audit_interval", kind: "duration", default: DAEMON_DEFAULTS.unreadAuditInterval, description: "how often the background unread audit (spec 002 §3.4) takes a step: a few SCAN calls over the list's row hashes, at most 5,000 rows examined, 1% of the rows with unread idle for 24 h compared with the definition and their users reconciled; sets unread_drift_ratio after each full pass (off: no background audit)" },
  ]),
  ...section("rooms", [
    { key: "rooms.msg_rate", kind: "integer", min: 1, max: 100_000, default: ROOM_MSG_RATE, description: "room_msg_rate (spec 003 §1.5): messages per second one chat room's writer takes on this node, all senders together, with a burst of one second's worth; past it ROOM_SEND is answered RATE_LIMITED with retry_after_ms and nothing is kept (docs/rooms.md). The spec's 20 is the product's limit; benches raise it to measure what a node carries" },
    { key: "rooms.flush_share_percent", kind: "integer", min: 5, max: 100, default: ROOM_FLUSH_SHARE_PERCENT, description: "the share of this node's time its room writes may take while a frame interval's ROOM_BATCHes go out: after a turn of writes that took t, the next waits t × (100 − share) / share, so a 1:1 message's commit, relay and push keep the rest (spec 003 C-3's isolation); a room with more connections than the share writes in an interval gets fewer frames, each with more events (docs/rooms.md). 100 writes as fast as the node can" },
  ]),
  ...section("retention", [
    { key: "retention.interval", kind: "duration", default: DAEMON_DEFAULTS.retentionInterval, description: "how often this node's retention task walks the relay buckets it owns and trims each conversation by its tenant's or group's rule (`qimctl retention`, docs/retention.md): bounded steps of at most 200 history entries; a tenant without a policy is never trimmed (off: no trimming on this node)" },
  ]),
  ...section("groups", [
    { key: "groups.max_members", kind: "integer", min: 1, max: 100_000_000, default: DAEMON_DEFAULTS.groupsMaxMembers, description: "the most current (ACTIVE) members a group may have: a create, add or bulk-add batch that would take a group past it is refused FAILED_PRECONDITION (exit 4) with the limit named, before anything is written (checked in the same atomic step as the change, so concurrent adds cannot overshoot). Lowering it refuses further adds to a group already past it; nothing is removed" },
  ]),
  ...section("cluster", [
    { key: "node.id", kind: "string", description: "this server's node id in the engine cluster (1–64 of A-Z a-z 0-9 . _ -); default: generated once and kept in <data_dir>/node-id" },
    { key: "cluster.lease_ttl", kind: "duration", default: DAEMON_DEFAULTS.clusterLeaseTtl, description: "a node whose heartbeat is older than this (by Redis's clock) is dead and its units move; at least twice cluster.heartbeat_interval" },
    { key: "cluster.units", kind: "enum-list", values: ["relay", "partition", "slot", "room"], default: "relay,partition,slot,room", description: "the kinds of units this node takes: relay (relay buckets: relays commits to the dispatch log), partition (dispatch partitions: session projection, conversation list), slot (user slots: registration, CMD state), room (room units: the writers of chat rooms, core/rooms; a node that takes them should run the gateway); relay alone makes an API node that leaves projecting to the others. Every kind needs a live node that takes it; every node must run a version that knows this setting before one is restricted (docs/cluster.md, \"Node roles\")" },
    { key: "cluster.heartbeat_interval", kind: "duration", default: DAEMON_DEFAULTS.clusterHeartbeatInterval, description: "how often a node heartbeats and takes or gives up units" },
  ]),
  ...section("cassandra", [
    { key: "cassandra.contact_points", kind: "addresses", description: "Cassandra host[:port] list: the conversation-set authority (unset: the Redis-hash development fallback)" },
    { key: "cassandra.local_dc", kind: "string", description: "Cassandra local data center (default datacenter1)" },
    { key: "cassandra.keyspace", kind: "string", description: "keyspace (default qim; created if missing)" },
    { key: "cassandra.consistency", kind: "enum", values: CASSANDRA_CONSISTENCIES, description: "consistency level (default LOCAL_QUORUM)" },
    { key: "cassandra.replication_class", kind: "enum", values: CASSANDRA_REPLICATION_CLASSES, default: DAEMON_DEFAULTS.cassandraReplicationClass, description: "replication strategy of the keyspace when the server creates it (an existing keyspace is left as it is: change it with ALTER KEYSPACE and a repair). SimpleStrategy, the default, suits a single development node; a production cluster uses NetworkTopologyStrategy (docs/operator-guide.md, \"Cassandra: three nodes and consistency\")" },
    { key: "cassandra.replication_factor", kind: "integer", min: 1, max: CASSANDRA_MAX_REPLICATION_FACTOR, default: DAEMON_DEFAULTS.cassandraReplicationFactor, description: "copies of every row when the server creates the keyspace (in cassandra.replication_dc with NetworkTopologyStrategy). Default 1: one node, no loss tolerated; 3 with LOCAL_QUORUM keeps writing and reading through the loss of one node" },
    { key: "cassandra.replication_dc", kind: "string", description: "the data center NetworkTopologyStrategy places the copies in (default: cassandra.local_dc, else datacenter1); ignored with SimpleStrategy" },
    { key: "cassandra.user", kind: "string", description: "user for PasswordAuthenticator" },
    { key: "cassandra.password", kind: "secret", secret: true, description: "the password (environment or config file only; prefer cassandra.password_file)" },
    { key: "cassandra.password_file", kind: "file", description: "file holding the password (a trailing newline is ignored)" },
    ...storeTls("cassandra", { enabled: "client encryption (also on with any cassandra.tls file)", servers: "the Cassandra nodes", cert: "when the nodes require client authentication", host: "each contact point's host" }),
  ]),
]);

/** The config file's path: a flag and an environment variable of their own (not a key of the file). */
export const CONFIG_FLAG = "config";
export const CONFIG_ENV = "QIM_CONFIG";
/** Print the effective settings (secrets redacted) and exit. */
export const PRINT_CONFIG_FLAG = "print-config";

export const SETTING_BY_KEY: ReadonlyMap<string, SettingSpec> = new Map(SETTINGS.map((s) => [s.key, s]));

/** What --help says about a setting: its description, default, environment variable and config key. */
export function helpOf(s: SettingSpec): string {
  const parts = [s.description];
  if (s.default !== undefined && s.default !== false) parts.push(`default ${String(s.default)}`);
  if (s.env.length > 0) parts.push(`env ${s.env.join(" + ")}`);
  parts.push(`config ${s.key}`);
  return `${parts[0]} (${parts.slice(1).join("; ")})`;
}
