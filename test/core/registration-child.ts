/**
 * A registration task that dies by SIGKILL right after the authority accepted its first batch and
 * before it popped the queue — the worst moment (ADR-0021 §4). Run by projection tests as a child
 * process, its configuration in the environment (it may carry Cassandra credentials, which the
 * command line would show to every user of the machine):
 *   QIM_REGISTRATION_CHILD='{ topology, keyPrefix, authority: "redis-hash" | CassandraOptions }' node registration-child.js
 */
import { CassandraAuthority, KeySpace, RedisHashAuthority, RedisStore, RegistrationTask, type CassandraOptions, type TopologyConfig } from "../../core/index.js";

const cfg = JSON.parse(process.env.QIM_REGISTRATION_CHILD ?? "") as {
  topology: TopologyConfig;
  keyPrefix: string;
  authority: "redis-hash" | CassandraOptions;
};
const store = new RedisStore(cfg.topology);
const keys = new KeySpace(cfg.keyPrefix);
const authority = cfg.authority === "redis-hash"
  ? new RedisHashAuthority(store, keys)
  : new CassandraAuthority(cfg.authority);
await authority.init();
const task = new RegistrationTask(store, keys, authority, {
  afterAuthorityWrite: (items) => {
    process.stdout.write(`wrote ${items.length}\n`, () => process.kill(process.pid, "SIGKILL"));
    return new Promise(() => {}); // never pops
  },
});
await task.drainAll();
process.stdout.write("drained without dying\n");
process.exit(3);
