import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { toDaemonSettings } from "../../server/daemon-settings.js";
import {
  EXAMPLE, effectiveSettings, formatSize, parseDuration, parseSize, readConfigFile, renderEffective, renderReference, resolveSettings, SETTINGS, SettingsError,
  type SettingInputs,
} from "../../server/settings/index.js";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
const dir = mkdtempSync(path.join(tmpdir(), "qim-settings-"));
const file = (name: string, text = "x\n") => { const f = path.join(dir, name); writeFileSync(f, text, { mode: 0o600 }); return f; };
const tls = { "tls-ca": file("ca.pem"), "tls-cert": file("server.pem"), "tls-key": file("server-key.pem") };
const config = (name: string, yaml: string) => file(name, yaml);
const resolve = (flags: Record<string, unknown>, more: Partial<SettingInputs> = {}) =>
  resolveSettings({ flags: { ...tls, redis: "127.0.0.1:6379", ...flags }, env: {}, ...more });
/** The SettingsError a resolution throws (fails the test when it does not throw). */
const refusal = (fn: () => unknown): SettingsError => {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof SettingsError, String(err));
    return err;
  }
  assert.fail("expected a SettingsError");
};

describe("server settings: one schema for flags, environment, config file and defaults", () => {
  it("--dispatch-retention takes 90s, 30m, 6h, 1d (a bare number is seconds) or off", () => {
    assert.equal(parseDuration("90s"), 90_000);
    assert.equal(parseDuration("30m"), 1_800_000);
    assert.equal(parseDuration("6h"), 21_600_000);
    assert.equal(parseDuration("1d"), 86_400_000);
    assert.equal(parseDuration("1.5h"), 5_400_000);
    assert.equal(parseDuration("120"), 120_000);
    assert.equal(parseDuration("2500ms"), 2500);
    assert.equal(parseDuration("off"), 0);
    assert.equal(parseDuration("0"), 0);
    for (const bad of ["", "1w", "-1d", "500ms", "366d", "1 d", "d", "1e3s"]) {
      assert.throws(() => parseDuration(bad), /expected a duration from 1s to 365d/, bad);
    }
  });

  it("--audit-max-size takes bytes with binary or decimal units (64MiB, 512KiB, 100MB), a bare number of bytes, or off; --audit-keep 1 to 1000", () => {
    assert.equal(parseSize("64MiB"), 64 * 1024 * 1024);
    assert.equal(parseSize("64mib"), 64 * 1024 * 1024);
    assert.equal(parseSize("512KiB"), 512 * 1024);
    assert.equal(parseSize("1GiB"), 1024 ** 3);
    assert.equal(parseSize("1.5GiB"), 1.5 * 1024 ** 3);
    assert.equal(parseSize("100MB"), 100_000_000);
    assert.equal(parseSize("4KiB"), 4096);
    assert.equal(parseSize("8192"), 8192);
    assert.equal(parseSize("8192B"), 8192);
    assert.equal(parseSize("64 MiB"), 64 * 1024 * 1024);
    assert.equal(parseSize("off"), 0);
    assert.equal(parseSize("0"), 0);
    for (const bad of ["", "64M", "1KiB", "4KB", "4095", "-1MiB", "2PiB", "MiB", "1e9", "64 MiBs"]) {
      assert.throws(() => parseSize(bad), /expected a size from 4KiB to 1PiB/, bad);
    }
    for (const [bytes, text] of [[64 * 1024 * 1024, "64MiB"], [1024 ** 3, "1GiB"], [100_000_000, "100MB"], [4097, "4097"], [0, "off"]] as const) {
      assert.equal(formatSize(bytes), text);
      assert.equal(parseSize(text), bytes, `${text} reads back`);
    }
    const d = toDaemonSettings(resolve({}));
    assert.deepEqual([d.auditMaxBytes, d.auditKeep], [64 * 1024 * 1024, 10], "rotation at 64 MiB keeping 10 files by default");
    const r = resolve({ "audit-keep": "3" }, { env: { QIM_AUDIT_MAX_SIZE: "16KiB" } });
    assert.deepEqual([toDaemonSettings(r).auditMaxBytes, toDaemonSettings(r).auditKeep], [16 * 1024, 3]);
    assert.match(renderEffective(r), /^audit:\n(  .*\n)*  max_size: 16KiB  # env QIM_AUDIT_MAX_SIZE\n  keep: 3  # flag --audit-keep\n/m);
    assert.equal(toDaemonSettings(resolve({ "audit-max-size": "off" })).auditMaxBytes, 0);
    const fromFile = resolve({}, { configPath: config("rot.yaml", "audit:\n  max_size: 1GiB\n  keep: 50\n") });
    assert.deepEqual([toDaemonSettings(fromFile).auditMaxBytes, toDaemonSettings(fromFile).auditKeep], [1024 ** 3, 50]);
    assert.match(refusal(() => resolve({ "audit-max-size": "lots" })).message, /^--audit-max-size: expected a size/);
    assert.match(refusal(() => resolve({ "audit-keep": "0" })).message, /^--audit-keep: expected an integer from 1 to 1000/);
    assert.match(refusal(() => resolve({}, { configPath: config("rot-bad.yaml", "audit:\n  max_size: 12\n") })).message, /rot-bad\.yaml: audit\.max_size: expected a size from 4KiB/);
  });

  it("the other --cassandra-* settings need --cassandra-contact-points", () => {
    assert.doesNotThrow(() => resolve({}));
    assert.doesNotThrow(() => resolve({ "cassandra-contact-points": "10.0.0.1,10.0.0.2:9042", "cassandra-keyspace": "qim" }));
    assert.equal(refusal(() => resolve({ "cassandra-keyspace": "qim" })).flag, "--cassandra-keyspace");
    assert.equal(refusal(() => resolve({ "cassandra-consistency": "ONE" })).flag, "--cassandra-consistency");
    assert.equal(refusal(() => resolve({ "cassandra-contact-points": " , " })).flag, "--cassandra-contact-points");
    assert.equal(refusal(() => resolve({ "cassandra-consistency": "SOMETIMES", "cassandra-contact-points": "h" })).flag, "--cassandra-consistency");
  });

  it("a flag beats the environment, which beats the file, which beats the default; each value says where it came from", () => {
    const cfg = config("prec.yaml", "dispatch:\n  partitions: 16\n  cluster_id: from-file\n  retention: 6h\nlisten: 127.0.0.1:7000\n");
    const r = resolve({ partitions: "32" }, { env: { QIM_DISPATCH_CLUSTER_ID: "from-env" }, configPath: cfg });
    const s = toDaemonSettings(r);
    assert.equal(s.partitions, 32);
    assert.equal(s.clusterId, "from-env");
    assert.equal(s.dispatchRetentionMs, 6 * 3_600_000);
    assert.equal(s.listen, "127.0.0.1:7000");
    assert.equal(s.metricsListen, "127.0.0.1:9464");
    assert.deepEqual(
      ["dispatch.partitions", "dispatch.cluster_id", "dispatch.retention", "listen", "metrics_listen"].map((k) => r.sources.get(k)),
      ["flag", "env", "file", "file", "default"]);
    // QIM_CONFIG names the file when --config does not
    assert.equal(toDaemonSettings(resolve({}, { env: { QIM_CONFIG: cfg } })).partitions, 16);
    // --no-audit-fsync over a file's true
    assert.equal(toDaemonSettings(resolve({ "audit-fsync": false }, { configPath: config("fsync.yaml", "audit:\n  fsync: true\n") })).auditFsync, false);
  });

  it("an unknown key, a section given a value, or a bad value refuses the file with the key named", () => {
    const unknown = refusal(() => resolve({}, { configPath: config("typo.yaml", "redis:\n  pasword: x\n") }));
    assert.match(unknown.message, /typo\.yaml: unknown key redis\.pasword \(did you mean redis\.password\?\)/);
    assert.match(refusal(() => resolve({}, { configPath: config("top.yaml", "lissen: 1.2.3.4:1\n") })).message, /unknown key lissen \(did you mean listen\?\)/);
    assert.match(refusal(() => resolve({}, { configPath: config("sect.yaml", "redis: 127.0.0.1:6379\n") })).message, /redis is a section/);
    const bad = refusal(() => resolve({}, { configPath: config("bad.yaml", "dispatch:\n  partitions: ten\n") }));
    assert.match(bad.message, /bad\.yaml: dispatch\.partitions: expected an integer from 1 to 999, got "ten"/);
    assert.equal(bad.flag, "--partitions");
    assert.match(refusal(() => resolve({}, { configPath: config("yaml.yaml", "listen: [\n") })).message, /yaml\.yaml line \d+: not valid YAML/);
    assert.match(refusal(() => resolve({}, { configPath: path.join(dir, "missing.yaml") })).message, /missing\.yaml: cannot read it: ENOENT/);
    // the environment and flags are named the same way
    assert.match(refusal(() => resolve({}, { env: { QIM_DISPATCH_PARTITIONS: "0" } })).message, /^QIM_DISPATCH_PARTITIONS: expected an integer from 1 to 999/);
    assert.match(refusal(() => resolve({ redis: "redis://u:pw@10.0.0.1:6379" })).message, /^--redis: a Redis address must not carry credentials/);
    assert.match(refusal(() => resolve({ "redis-password-file": path.join(dir, "nope") })).message, /^--redis-password-file: cannot read .*nope: ENOENT/);
  });

  it("passwords never have a flag, and print-config redacts them; a user needs a password", () => {
    for (const s of SETTINGS.filter((x) => x.kind === "secret")) assert.equal(s.flag, null, s.key);
    const secret = "correct horse battery staple";
    const r = resolve({ "redis-user": "qim", redis: "rediss://10.0.0.5:6380" }, { env: { QIM_REDIS_PASSWORD: secret } });
    const s = toDaemonSettings(r);
    assert.equal(s.redisPassword, secret);
    assert.deepEqual(s.redisTls, {});
    const text = renderEffective(r);
    assert.ok(!text.includes(secret), text);
    assert.match(text, /^redis:\n {2}addrs: \[rediss:\/\/10\.0\.0\.5:6380\]  # flag --redis\n {2}user: qim  # flag --redis-user\n {2}password: <redacted>  # env QIM_REDIS_PASSWORD$/m);
    assert.ok(!JSON.stringify(effectiveSettings(r)).includes(secret));
    const fromFile = resolve({ "redis-user": "qim", "redis-password-file": file("pw", `${secret}\n`) });
    assert.equal(toDaemonSettings(fromFile).redisPassword, secret);
    assert.ok(!renderEffective(fromFile).includes(secret));
    assert.equal(refusal(() => resolve({ "redis-user": "qim" })).flag, "--redis-user");
    assert.equal(refusal(() => resolve({ "redis-password-file": file("pw2", "p") }, { env: { QIM_REDIS_PASSWORD: "p" } })).flag, "--redis-password-file");
    assert.equal(refusal(() => resolve({ "cassandra-contact-points": "h", "cassandra-user": "qim" })).flag, "--cassandra-user");
  });

  it("--insecure-dev only on a loopback listen address, unless --insecure-dev-allow-non-loopback", () => {
    const flags = { "insecure-dev": true, "tls-ca": undefined, "tls-cert": undefined, "tls-key": undefined };
    for (const listen of ["127.0.0.1:0", "localhost:7443", "[::1]:7443", "127.0.0.2:1"]) assert.doesNotThrow(() => resolve({ ...flags, listen }), listen);
    for (const listen of ["0.0.0.0:7443", "10.1.2.3:7443", "[::]:7443", "qim.example:7443"]) {
      const e = refusal(() => resolve({ ...flags, listen }));
      assert.equal(e.flag, "--listen", listen);
      assert.match(e.message, /only on a loopback address .*--insecure-dev-allow-non-loopback/);
    }
    assert.doesNotThrow(() => resolve({ ...flags, listen: "0.0.0.0:7443", "insecure-dev-allow-non-loopback": true }));
    assert.equal(refusal(() => resolve({ "tls-key": undefined })).flag, "--tls-key");
  });

  it("Redis: standalone or Cluster (a stronger source wins), rediss:// turns TLS on, no Redis at all is refused", () => {
    const both = refusal(() => resolve({ "redis-cluster": "127.0.0.1:7000" }));
    assert.equal(both.flag, "--redis-cluster");
    const cluster = toDaemonSettings(resolve({ redis: undefined, "redis-cluster": "127.0.0.1:7000,127.0.0.1:7001" }, { env: { QIM_REDIS_ADDR: "127.0.0.1:6379" } }));
    assert.deepEqual([cluster.redisCluster, cluster.redis], [["127.0.0.1:7000", "127.0.0.1:7001"], undefined]);
    const env = toDaemonSettings(resolve({ redis: undefined }, { env: { QIM_REDIS_ADDR: "10.0.0.1:6379", QIM_MESSAGE_STORE_ADDRS: "10.0.0.2:6379,10.0.0.3:6379" } }));
    assert.deepEqual(env.redis, ["10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"]);
    assert.equal(env.redisTls, undefined);
    assert.equal(refusal(() => resolve({ redis: undefined })).flag, "--redis");
  });

  it("store settings become the engine's connection options: Redis auth and TLS PEM in the topology, Cassandra credentials and TLS", async () => {
    const { cassandraOf, topologyOf } = await import("../../server/daemon.js");
    const ca = file("store-ca.pem", "-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n");
    const s = toDaemonSettings(resolve({
      redis: "rediss://10.0.0.5:6380,10.0.0.6:6380", "redis-user": "qim", "redis-tls-ca": ca, "redis-tls-servername": "redis.internal",
      "cassandra-contact-points": "10.0.1.1,10.0.1.2:9142", "cassandra-user": "qim_c", "cassandra-tls-ca": ca, "cassandra-local-dc": "dc1",
    }, { env: { QIM_REDIS_PASSWORD: "r-secret", QIM_CASSANDRA_PASSWORD: "c-secret" } }));
    assert.deepEqual(await topologyOf(s), {
      // addresses as given; a tls block (here from the CA setting) makes every one TLS (core/store)
      kind: "instances", addrs: ["rediss://10.0.0.5:6380", "10.0.0.6:6380"],
      auth: { username: "qim", password: "r-secret" }, tls: { caPem: readFileSync(ca, "utf8"), servername: "redis.internal" },
    });
    assert.deepEqual(await cassandraOf(s), {
      contactPoints: ["10.0.1.1", "10.0.1.2:9142"], localDataCenter: "dc1",
      // the default replication, spelled out (cassandra.replication_*)
      replication: { class: "SimpleStrategy", replication_factor: 1 },
      credentials: { username: "qim_c", password: "c-secret" }, tls: { caPem: readFileSync(ca, "utf8") },
    });
    // no contact points: the Redis-hash fallback, no Cassandra options at all
    assert.equal(await cassandraOf(toDaemonSettings(resolve({}))), undefined);
  });

  it("docs/config-reference.md is generated from the schema (npm run docs:config), and its example uses only known keys", () => {
    const doc = readFileSync(path.join(ROOT, "docs", "config-reference.md"), "utf8");
    assert.equal(doc, renderReference(), "docs/config-reference.md is stale: run npm run docs:config");
    for (const s of SETTINGS) assert.ok(doc.includes(`\`${s.key}\``), s.key);
    const keys = [...readConfigFile(config("example.yaml", EXAMPLE)).keys()];
    assert.ok(keys.includes("redis.password_file") && keys.includes("cassandra.tls.ca"), keys.join(","));
  });
});

describe("cluster settings (issue 11)", () => {
  it("node.id, data_dir and the lease defaults: the schema's defaults are core/cluster's constants", async () => {
    const { DEFAULT_HEARTBEAT_INTERVAL_MS, DEFAULT_LEASE_TTL_MS } = await import("../../core/index.js");
    const s = toDaemonSettings(resolve({}));
    assert.equal(s.clusterLeaseTtlMs, DEFAULT_LEASE_TTL_MS);
    assert.equal(s.clusterHeartbeatIntervalMs, DEFAULT_HEARTBEAT_INTERVAL_MS);
    // cluster.units: its values, its default and the CLI's list are core/cluster's unit kinds
    const { UNIT_KINDS } = await import("../../core/index.js");
    const { UNIT_KINDS: CLI_UNIT_KINDS } = await import("../../cli/cluster/results.js");
    assert.deepEqual(SETTINGS.find((x) => x.key === "cluster.units")!.values, UNIT_KINDS);
    assert.deepEqual(s.clusterUnits, UNIT_KINDS);
    assert.deepEqual(CLI_UNIT_KINDS, UNIT_KINDS);
    assert.deepEqual(toDaemonSettings(resolve({ "cluster-units": "Slot, relay" })).clusterUnits, ["relay", "slot"], "in the declared order, any case");
    assert.equal(s.nodeId, undefined);
    assert.equal(s.dataDir, ".qim", "the default audit log's directory");
    assert.equal(toDaemonSettings(resolve({ "audit-log": "/var/lib/qim/audit.log" })).dataDir, "/var/lib/qim");
    const t = toDaemonSettings(resolve({ "node-id": "n-1", "data-dir": "/srv/qim", "cluster-lease-ttl": "3s", "cluster-heartbeat-interval": "1s" }));
    assert.deepEqual([t.nodeId, t.dataDir, t.clusterLeaseTtlMs, t.clusterHeartbeatIntervalMs], ["n-1", "/srv/qim", 3000, 1000]);
  });

  it("conversation_list.unread_audit_interval: the default is core's UNREAD_AUDIT_INTERVAL_MS, a duration from flag, environment or file, off turns the audit off", async () => {
    const { UNREAD_AUDIT_INTERVAL_MS } = await import("../../core/index.js");
    assert.equal(toDaemonSettings(resolve({})).unreadAuditIntervalMs, UNREAD_AUDIT_INTERVAL_MS);
    assert.equal(toDaemonSettings(resolve({ "conversation-list-unread-audit-interval": "1m" })).unreadAuditIntervalMs, 60_000);
    assert.equal(toDaemonSettings(resolve({ "conversation-list-unread-audit-interval": "off" })).unreadAuditIntervalMs, 0);
    assert.equal(toDaemonSettings(resolve({}, { configPath: config("audit.yaml", "conversation_list:\n  unread_audit_interval: 30s\n") })).unreadAuditIntervalMs, 30_000);
    assert.equal(refusal(() => resolve({ "conversation-list-unread-audit-interval": "soon" })).key, "conversation_list.unread_audit_interval");
  });

  it("cassandra.replication_*: defaults are core's (SimpleStrategy, 1); the server's keyspace replication follows class, factor and data center", async () => {
    const core = await import("../../core/index.js");
    const { cassandraOf } = await import("../../server/daemon.js");
    const { CASSANDRA_REPLICATION_CLASSES: schemaClasses, CASSANDRA_MAX_REPLICATION_FACTOR: schemaMax } = await import("../../server/settings/schema.js");
    assert.deepEqual([...schemaClasses], [...core.CASSANDRA_REPLICATION_CLASSES]);
    assert.equal(schemaMax, core.CASSANDRA_MAX_REPLICATION_FACTOR);
    const d = toDaemonSettings(resolve({ "cassandra-contact-points": "127.0.0.1:9042" }));
    assert.equal(d.cassandraReplicationClass, core.CASSANDRA_DEFAULT_REPLICATION_CLASS);
    assert.equal(d.cassandraReplicationFactor, core.CASSANDRA_DEFAULT_REPLICATION_FACTOR);
    // by hand: what CREATE KEYSPACE must say
    assert.deepEqual((await cassandraOf(d))!.replication, { class: "SimpleStrategy", replication_factor: 1 });
    const nts = toDaemonSettings(resolve({ "cassandra-contact-points": "127.0.0.1:9042", "cassandra-replication-class": "NetworkTopologyStrategy", "cassandra-replication-factor": "3", "cassandra-local-dc": "dc_east" }));
    assert.deepEqual((await cassandraOf(nts))!.replication, { class: "NetworkTopologyStrategy", dc_east: 3 });
    const ntsDc = toDaemonSettings(resolve({ "cassandra-contact-points": "127.0.0.1:9042", "cassandra-replication-class": "NetworkTopologyStrategy", "cassandra-replication-factor": "3", "cassandra-replication-dc": "dc2" }));
    assert.deepEqual((await cassandraOf(ntsDc))!.replication, { class: "NetworkTopologyStrategy", dc2: 3 });
    assert.equal(core.createKeyspaceCql("qim", { class: "NetworkTopologyStrategy", dc2: 3 }), "CREATE KEYSPACE IF NOT EXISTS qim WITH replication = {'class': 'NetworkTopologyStrategy', 'dc2': 3}");
    assert.equal(refusal(() => resolve({ "cassandra-replication-class": "LocalStrategy" })).key, "cassandra.replication_class");
    assert.equal(refusal(() => resolve({ "cassandra-replication-factor": "0" })).key, "cassandra.replication_factor");
    assert.equal(refusal(() => resolve({ "cassandra-replication-factor": "10" })).key, "cassandra.replication_factor");
    assert.throws(() => core.keyspaceReplication({ replicationClass: "NetworkTopologyStrategy", replicationFactor: 3, dataCenter: "dc'; DROP" }), /data center name/);
    // the environment of a process without settings (QIM_CASSANDRA_*) follows the same rule
    assert.deepEqual(core.cassandraOptionsFromEnv({ QIM_CASSANDRA_CONTACT_POINTS: "127.0.0.1", QIM_CASSANDRA_REPLICATION_CLASS: "NetworkTopologyStrategy", QIM_CASSANDRA_REPLICATION_FACTOR: "3" })!.replication,
      { class: "NetworkTopologyStrategy", datacenter1: 3 });
    assert.equal(core.cassandraOptionsFromEnv({ QIM_CASSANDRA_CONTACT_POINTS: "127.0.0.1" })!.replication, undefined);
  });

  it("groups.max_members: the default is core's DEFAULT_MAX_GROUP_MEMBERS (1,000,000), an integer from flag, environment or file, at least 1", async () => {
    const { DEFAULT_MAX_GROUP_MEMBERS } = await import("../../core/index.js");
    assert.equal(DEFAULT_MAX_GROUP_MEMBERS, 1_000_000);
    assert.equal(toDaemonSettings(resolve({})).groupsMaxMembers, DEFAULT_MAX_GROUP_MEMBERS);
    assert.equal(toDaemonSettings(resolve({ "groups-max-members": "2500" })).groupsMaxMembers, 2500);
    assert.equal(toDaemonSettings(resolve({}, { configPath: config("groups.yaml", "groups:\n  max_members: 5000000\n") })).groupsMaxMembers, 5_000_000);
    assert.equal(refusal(() => resolve({ "groups-max-members": "0" })).key, "groups.max_members");
    assert.equal(refusal(() => resolve({ "groups-max-members": "many" })).key, "groups.max_members");
  });

  it("redis.ack_replicas / redis.ack_timeout: off by default (no ack policy in the topology); on, the topology asks for WAIT replicas timeout; a wait from 1s to 4s", async () => {
    const { topologyOf } = await import("../../server/daemon.js");
    const off = toDaemonSettings(resolve({}));
    assert.equal(off.redisAckReplicas, 0);
    assert.equal(off.redisAckTimeoutMs, 1000);
    assert.equal((await topologyOf(off)).ack, undefined);
    const on = toDaemonSettings(resolve({ "redis-ack-replicas": "1", "redis-ack-timeout": "2s" }));
    assert.deepEqual((await topologyOf(on)).ack, { replicas: 1, timeoutMs: 2000 });
    const fromFile = toDaemonSettings(resolve({}, { configPath: config("ack.yaml", "redis:\n  ack_replicas: 2\n") }));
    assert.deepEqual((await topologyOf(fromFile)).ack, { replicas: 2, timeoutMs: 1000 });
    assert.equal(refusal(() => resolve({ "redis-ack-replicas": "1", "redis-ack-timeout": "5s" })).key, "redis.ack_timeout");
    assert.equal(refusal(() => resolve({ "redis-ack-replicas": "1", "redis-ack-timeout": "off" })).key, "redis.ack_timeout");
    assert.equal(refusal(() => resolve({ "redis-ack-replicas": "-1" })).key, "redis.ack_replicas");
  });

  it("refuses a lease shorter than two heartbeats, an 'off' lease or heartbeat, and a malformed node id, naming the setting", () => {
    assert.equal(refusal(() => resolve({ "cluster-lease-ttl": "1s" })).key, "cluster.lease_ttl");
    assert.equal(refusal(() => resolve({ "cluster-lease-ttl": "off" })).key, "cluster.lease_ttl");
    assert.equal(refusal(() => resolve({ "cluster-heartbeat-interval": "off" })).key, "cluster.heartbeat_interval");
    assert.equal(refusal(() => resolve({ "node-id": "has space" })).key, "node.id");
  });

  it("a generated node id is written once to <data_dir>/node-id and read back on the next start", async () => {
    const { nodeIdOf, NODE_ID_FILE } = await import("../../server/daemon.js");
    const dataDir = path.join(dir, "data-dir-test");
    const first = await nodeIdOf({ dataDir });
    assert.match(first, /^node-[0-9a-f]{8}$/);
    assert.equal(readFileSync(path.join(dataDir, NODE_ID_FILE), "utf8").trim(), first);
    assert.equal(await nodeIdOf({ dataDir }), first);
    assert.equal(await nodeIdOf({ dataDir, nodeId: "given" }), "given");
  });
});
