/**
 * An engine server in a process of its own for the live-version crash test (versions.test.ts):
 * it watches one user's SESSION_DELTA stream, sends messages into the user's group and relays them
 * (the low-latency path publishes live frames; the compaction window of one hour never flushes),
 * printing every frame it sends as a JSON line `frame {...}`. Then it prints `ready` and waits for
 * the parent's SIGKILL, with the live frames ahead of what is stored. Configuration:
 *   QIM_LIVE_CHILD='{ topology, keyPrefix, partitionCount, tenant, owner, user, group, sends }' node live-child.js
 */
import { EngineRuntime, KeySpace, RedisHashAuthority, RedisStore, type SessionFrame, type TopologyConfig, type Uuid } from "../../../core/index.js";

const cfg = JSON.parse(process.env.QIM_LIVE_CHILD ?? "") as {
  topology: TopologyConfig; keyPrefix: string; partitionCount: number; tenant: Uuid; owner: Uuid; user: Uuid; group: Uuid; sends: number;
};
const store = new RedisStore(cfg.topology);
const engine = new EngineRuntime({
  store,
  keyPrefix: cfg.keyPrefix,
  dispatch: { clusterId: "test", topicId: "dispatch", partitionCount: cfg.partitionCount },
  authority: new RedisHashAuthority(store, new KeySpace(cfg.keyPrefix)),
  projection: { background: false },
  relayIntervalMs: 0,
  conversationList: { compactor: { background: false, windowMs: 3_600_000 } },
});
await engine.start();
let frames = 0;
await engine.sessionView.watch(cfg.tenant, cfg.user, (f: SessionFrame) => {
  frames++;
  process.stdout.write(`frame ${JSON.stringify(f)}\n`);
});
for (let i = 0; i < cfg.sends; i++) {
  const before = frames;
  await engine.conversations.send({ tenant: cfg.tenant, group: cfg.group, sender: cfg.owner, text: `live ${i}` });
  await engine.relay.drainAll();
  // one merge window per send, so that every send is its own frames (a bound on waiting, not a clock)
  for (let t = 0; t < 500 && frames < before + 2; t++) await new Promise((r) => setTimeout(r, 10));
}
process.stdout.write("ready\n");
setInterval(() => {}, 60_000);
