/**
 * One writer of the durable CMD state on Cassandra in a process of its own, for
 * state-cassandra-crash.test.ts, which SIGKILLs it mid-write. Configuration in the environment:
 *   QIM_CMD_WRITER='{ redisAddr, contactPoint, keyspace, keyPrefix, tenant, users, channels, seed }'
 * It writes batches of upserts (every user and channel, seeded random values) one after another
 * and prints, for each, `start <json rows>` before the write and `done <n>` once it resolved: the
 * test's history of what may have landed (started) and what surely did (done).
 */
import { CassandraCmdStateStore, KeySpace, RedisStore, type Uuid } from "../../../core/index.js";
import { mulberry32 } from "../../harness/random.js";

const cfg = JSON.parse(process.env.QIM_CMD_WRITER ?? "") as {
  redisAddr: string; contactPoint: string; keyspace: string; keyPrefix: string; tenant: Uuid; users: Uuid[]; channels: string[]; seed: number;
};
const store = new RedisStore({ kind: "instances", addrs: [cfg.redisAddr] });
const states = new CassandraCmdStateStore({ store, keys: new KeySpace(cfg.keyPrefix), cassandra: { contactPoints: [cfg.contactPoint], keyspace: cfg.keyspace, consistency: "ONE" } });
await states.init();
const rand = mulberry32(cfg.seed);
const int = (n: number) => Math.floor(rand() * n);
for (let n = 0; ; n++) {
  const rows = cfg.users.flatMap((user) => cfg.channels.map((channelId) => ({
    tenant: cfg.tenant, user, channel: { channelId, channelType: 2 }, readSeq: int(1000), deletedToSeq: int(500), activeAt: 1_000_000 + int(100_000), updatedAt: 1 + int(1000), lastMsgSeq: 0,
  })));
  process.stdout.write(`start ${JSON.stringify(rows.map((r) => [r.user, r.channel.channelId, r.readSeq, r.deletedToSeq, r.activeAt]))}\n`);
  await states.upsertStates(rows, { owner: "", token: 0 });
  process.stdout.write(`done ${n}\n`);
}
