/**
 * A registration task that dies by SIGKILL right after the authority accepted its first batch and
 * before it popped the queue — the worst moment (ADR-0021 §4). Run by projection tests as a child
 * process:  node registration-child.js '<json config>'
 *   { topology, keyPrefix, authority: "redis-hash" | { contactPoints, keyspace } }
 */
import { CassandraAuthority, KeySpace, RedisHashAuthority, RedisStore, RegistrationTask, type TopologyConfig } from "../../core/index.js";

const cfg = JSON.parse(process.argv[2]!) as {
  topology: TopologyConfig;
  keyPrefix: string;
  authority: "redis-hash" | { contactPoints: string[]; keyspace: string };
};
const store = new RedisStore(cfg.topology);
const keys = new KeySpace(cfg.keyPrefix);
const authority = cfg.authority === "redis-hash"
  ? new RedisHashAuthority(store, keys)
  : new CassandraAuthority({ contactPoints: cfg.authority.contactPoints, keyspace: cfg.authority.keyspace });
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
