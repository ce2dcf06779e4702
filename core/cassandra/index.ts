/**
 * The engine's Cassandra connection (issue 25): its settings (from the daemon's settings or the
 * QIM_CASSANDRA_* environment), the driver client, connect and keyspace creation, and the one-line
 * failure an operator reads. Used by the conversation-set authority (core/projection) and the
 * durable CMD state (core/cmd-sync), each creating its own tables in the one keyspace.
 */
export {
  cassandraContextOf, cassandraFailureLine, CassandraConnection, cassandraOptionsFromEnv, createKeyspaceCql, newCassandraClient, resolveCassandraOptions,
  CASSANDRA_DEFAULT_LOCAL_DC, CASSANDRA_DEFAULT_REPLICATION_CLASS, CASSANDRA_DEFAULT_REPLICATION_FACTOR, CASSANDRA_MAX_REPLICATION_FACTOR, CASSANDRA_REPLICATION_CLASSES, keyspaceReplication,
  type CassandraConnectContext, type CassandraReplicationClass, type CassandraOptions, type CassandraTls,
} from "./connection.js";
