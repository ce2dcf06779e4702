/**
 * The conversation-list engine on a real topology: an EngineRuntime with nothing in the
 * background (the test drives the relay, the compaction consumer and the clock), a key prefix
 * of its own per fixture.
 */
import { after, before } from "node:test";
import {
  EngineRuntime, KeySpace, newUuid, RedisHashAuthority, RedisStore, type ConversationListStackOptions, type Uuid,
} from "../../../core/index.js";
import { ALL_TOPOLOGIES, startTopology, type TestTopology, type TopologyKind } from "../../harness/redis.js";

export interface ListFixture {
  topology: TestTopology;
  store: RedisStore;
  engine: EngineRuntime;
  /** The injected clock of the compaction window (ms). */
  clock: { now: number };
  /** created_at of messages: one ms later for each message, so that activity order is exact. */
  msgClock: { now: number };
  /** Relays every commit, then lets the list consumer read everything the log holds. */
  deliver: () => Promise<void>;
  /** deliver(), then moves the clock past the window and flushes. */
  settle: () => Promise<void>;
  tenant: () => Uuid;
}

export function useList(kind: TopologyKind, opts: ConversationListStackOptions = {}): ListFixture {
  const fx = { clock: { now: 1_000_000 }, msgClock: { now: 1_700_000_000_000 } } as ListFixture;
  before(async () => {
    fx.topology = await startTopology(kind);
    fx.store = new RedisStore(fx.topology.config);
    const keyPrefix = `cl${newUuid().slice(0, 8)}`;
    fx.engine = new EngineRuntime({
      store: fx.store,
      keyPrefix,
      dispatch: { clusterId: "test", topicId: "dispatch", partitionCount: 4 },
      authority: new RedisHashAuthority(fx.store, new KeySpace(keyPrefix)),
      projection: { background: false },
      conversation: { now: () => ++fx.msgClock.now },
      relayIntervalMs: 0,
      conversationList: { now: () => fx.clock.now, ...opts, compactor: { background: false, ...opts.compactor } },
      // the background unread audit only when a test steps it (engine.unreadAudit.tick())
      unreadAudit: { intervalMs: 0 },
    });
    await fx.engine.start();
    fx.deliver = async () => {
      await fx.engine.relay.drainAll();
      await fx.engine.projection.projector.catchUp();
      await fx.engine.conversationList.compactor.poll();
    };
    fx.settle = async () => {
      await fx.deliver();
      fx.clock.now += 60_000;
      await fx.engine.conversationList.compactor.flushIfDue();
    };
    fx.tenant = () => newUuid();
  });
  after(async () => {
    await fx.engine?.stop();
    await fx.store?.close();
    await fx.topology?.stop();
  });
  return fx;
}

/**
 * The topologies the list's core suites run on: one redis-server, and a Redis Cluster (every
 * key of a script on one slot, SCAN over every master). QIM_TEST_TOPOLOGIES narrows it.
 */
export const LIST_TOPOLOGIES: TopologyKind[] = ALL_TOPOLOGIES.filter((k) => k === "single" || k === "cluster");
