/**
 * The upgrade of the CMD state's last seq (upgrade-scenarios.ts) on a real Cassandra (the run's
 * shared node) with the leases and the CMD log on a real redis-server: rows of the old code are
 * inserted without last_msg_seq (null), with their active index entries.
 */
import assert from "node:assert/strict";
import cassandra from "cassandra-driver";
import { after, before } from "node:test";
import { CassandraCmdStateStore, CMD_CASSANDRA_ACTIVE_TABLE, CMD_CASSANDRA_STATE_TABLE, CmdSync, KeySpace, newUuid } from "../../../core/index.js";
import { sharedCassandra, uniqueKeyspace } from "../../harness/cassandra.js";
import { useCmdRedis } from "./fixture.js";
import { cmdUpgradeScenarios } from "./upgrade-scenarios.js";

const redis = useCmdRedis("single");
let contactPoints: string[];
const keyspace = uniqueKeyspace("cmdupg");
let raw: cassandra.Client;
before(async () => {
  contactPoints = [(await sharedCassandra()).contactPoint];
  raw = new cassandra.Client({ contactPoints, localDataCenter: "datacenter1", protocolOptions: { maxVersion: 4 } });
  // the tables as the code before the last seq made them (no last_msg_seq, no cmd_state_meta):
  // the store finds them at its first init, as after an upgrade
  await raw.execute(`CREATE KEYSPACE IF NOT EXISTS ${keyspace} WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}`);
  await raw.execute(`CREATE TABLE ${keyspace}.${CMD_CASSANDRA_STATE_TABLE} (tenant_id uuid, user_id uuid, channel_type int, channel_id text,
    read_seq bigint, deleted_to_seq bigint, active_at bigint, updated_at bigint, fence_token bigint, PRIMARY KEY ((tenant_id, user_id), channel_type, channel_id))`);
  await raw.execute(`CREATE TABLE ${keyspace}.${CMD_CASSANDRA_ACTIVE_TABLE} (tenant_id uuid, user_id uuid, active_at bigint, channel_type int, channel_id text,
    PRIMARY KEY ((tenant_id, user_id), active_at, channel_type, channel_id)) WITH CLUSTERING ORDER BY (active_at DESC, channel_type ASC, channel_id ASC)`);
});
after(async () => {
  await raw?.shutdown();
});

cmdUpgradeScenarios("CMD sync after the upgrade, Cassandra", async () => {
  const keys = new KeySpace(`upg${newUuid().slice(0, 8)}`);
  const states = new CassandraCmdStateStore({ store: redis.store, keys, cassandra: { contactPoints, keyspace } });
  const cmd = new CmdSync({ store: redis.store, keys, cluster: null, log: () => {}, states }, { catchUpIntervalMs: 0, flushIntervalMs: 0 });
  await cmd.start();
  // tables the code before made: rows not remembered are read before every write (cells with ordinary timestamps)
  assert.equal(states.readsBeforeUpsert, true);
  return {
    cmd,
    async writeLegacy(tenant, user, rows) {
      // as the old code wrote them: no last_msg_seq column in the insert
      for (let i = 0; i < rows.length; i += 50) {
        await raw.batch(rows.slice(i, i + 50).flatMap((r) => [
          {
            query: `INSERT INTO ${keyspace}.${CMD_CASSANDRA_STATE_TABLE} (tenant_id, user_id, channel_type, channel_id, read_seq, deleted_to_seq, active_at, updated_at, fence_token) VALUES (?, ?, 2, ?, ?, 0, ?, 1, 0)`,
            params: [tenant, user, r.channelId, cassandra.types.Long.fromNumber(r.readSeq), cassandra.types.Long.fromNumber(r.activeAt)],
          },
          {
            query: `INSERT INTO ${keyspace}.${CMD_CASSANDRA_ACTIVE_TABLE} (tenant_id, user_id, active_at, channel_type, channel_id) VALUES (?, ?, ?, 2, ?)`,
            params: [tenant, user, cassandra.types.Long.fromNumber(r.activeAt), r.channelId],
          },
        ]), { prepare: true, logged: false });
      }
    },
    async unreadLeft(tenant, user) {
      return (await states.listUnread(tenant, user, 100_000)).length;
    },
    close: () => cmd.stop(),
  };
}, 3000);
