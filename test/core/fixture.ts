import { after, before } from "node:test";
import {
  ConversationService,
  LOG_START,
  OutboxRelay,
  RedisStore,
  RedisStreamsDispatchLog,
  type DispatchEntry,
  type ConversationOptions,
  type LogPosition,
  type Uuid,
} from "../../core/index.js";
import { conversationKeyList, dumpKeys } from "../harness/dump.js";
import { startTopology, type TestTopology, type TopologyKind } from "../harness/redis.js";
import { newUuid } from "../../core/index.js";

export interface EngineFixture {
  topology: TestTopology;
  store: RedisStore;
  engine: ConversationService;
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
export function useEngine(kind: TopologyKind, options: ConversationOptions = {}): EngineFixture {
  const fx = {} as EngineFixture;
  before(async () => {
    fx.topology = await startTopology(kind);
    fx.store = new RedisStore(fx.topology.config);
    fx.engine = new ConversationService(fx.store, { keyPrefix: `t${newUuid().slice(0, 8)}`, ...options });
    fx.log = new RedisStreamsDispatchLog(fx.store, fx.engine.keys, { clusterId: "test", topicId: "dispatch", partitionCount: 4 });
    await fx.log.ensureIdentity();
    fx.relay = new OutboxRelay(fx.store, fx.engine.keys, fx.log);
    fx.tenant = () => newUuid();
    fx.dispatched = async () => {
      const out: DispatchEntry[] = [];
      for (let p = 0; p < fx.log.identity.partitionCount; p++) {
        let from: LogPosition = LOG_START;
        for (;;) {
          const { entries } = await fx.log.readFrom(p, from, 500);
          if (entries.length === 0) break;
          out.push(...entries);
          const last = entries[entries.length - 1]!;
          from = { offset: last.offset + 1, id: last.id };
        }
      }
      return out;
    };
    fx.digest = (tenant, group) => {
      const k = fx.engine.conversationKeys(tenant, group);
      return dumpKeys(fx.store.clientFor(k.tag), conversationKeyList(k));
    };
  });
  after(async () => {
    await fx.relay?.stop();
    await fx.store?.close();
    await fx.topology?.stop();
  });
  return fx;
}
