import { randomUUID } from "node:crypto";
import { after, before } from "node:test";
import {
  Engine,
  OutboxRelay,
  RedisStore,
  RedisStreamsDispatchLog,
  type DispatchEntry,
  type EngineOptions,
  type Uuid,
} from "../../core/index.js";
import { startTopology, type TestTopology, type TopologyKind } from "../harness/redis.js";

export interface EngineFixture {
  topology: TestTopology;
  store: RedisStore;
  engine: Engine;
  log: RedisStreamsDispatchLog;
  relay: OutboxRelay;
  tenant: () => Uuid;
  /** Every dispatch-log entry of every partition, in partition order. */
  dispatched: () => Promise<DispatchEntry[]>;
  /** Every key (and its full value) of one group's bucket, for before/after comparisons. */
  digest: (tenant: Uuid, group: Uuid) => Promise<string>;
}

/**
 * Starts a topology for the file's tests (before/after hooks) and builds the engine on it with a
 * key prefix of its own. The returned object is filled in when `before` has run.
 */
export function useEngine(kind: TopologyKind, options: EngineOptions = {}): EngineFixture {
  const fx = {} as EngineFixture;
  before(async () => {
    fx.topology = await startTopology(kind);
    fx.store = new RedisStore(fx.topology.config);
    fx.engine = new Engine(fx.store, { keyPrefix: `t${randomUUID().slice(0, 8)}`, ...options });
    fx.log = new RedisStreamsDispatchLog(fx.store, fx.engine.keys, { clusterId: "test", topicId: "dispatch", partitionCount: 4 });
    await fx.log.ensureIdentity();
    fx.relay = new OutboxRelay(fx.store, fx.engine.keys, fx.log);
    fx.tenant = () => randomUUID();
    fx.dispatched = async () => {
      const out: DispatchEntry[] = [];
      for (let p = 0; p < fx.log.identity.partitionCount; p++) {
        let after = "0";
        for (;;) {
          const page = await fx.log.read(p, after, 500);
          if (page.length === 0) break;
          out.push(...page);
          after = page[page.length - 1]!.offset;
        }
      }
      return out;
    };
    fx.digest = async (tenant, group) => {
      const k = fx.engine.conversationKeys(tenant, group);
      const client = fx.store.clientFor(k.tag);
      const keys = [k.cseq, k.hist, k.commits, k.idem, k.grpmeta, k.grpmembers, k.grpdeltas, k.vpending, k.readseq, k.outbox];
      const parts: string[] = [];
      for (const key of keys) {
        const type = await client.type(key);
        let value: unknown = null;
        if (type === "string") value = await client.get(key);
        else if (type === "hash") value = Object.entries(await client.hgetall(key)).sort();
        else if (type === "zset") value = await client.zrange(key, "0", "-1", "WITHSCORES");
        else if (type === "list") value = await client.lrange(key, 0, -1);
        parts.push(`${key} ${type} ${JSON.stringify(value)}`);
      }
      return parts.join("\n");
    };
  });
  after(async () => {
    await fx.relay?.stop();
    await fx.store?.close();
    await fx.topology?.stop();
  });
  return fx;
}
