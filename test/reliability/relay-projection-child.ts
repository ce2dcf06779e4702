/**
 * The outbox relay and the session projection (consumer + registration task) in a process of
 * their own, for relay-projection-kill.test.ts, which SIGKILLs it at random moments, and
 * fanout-kill.test.ts, which kills it at a fail point (QIM_FAILPOINTS in its environment):
 *   node relay-projection-child.js '<json config>'
 *   { topology, keyPrefix, dispatch: {clusterId, topicId, partitionCount}, lowLatency: boolean, mode: "run" | "drain",
 *     relay?: { fanoutChunkRecipients?, fanoutChunksPerPass? } }
 *
 * "run": wired as the admin server wires them — the relay sweeping every bucket (the parent's
 * commits come from another process, so no kicks), each append handed to the low-latency path
 * when `lowLatency`, the consumer polling, the registration task running — then prints "ready"
 * and runs until killed. "drain": relays, projects and registers everything there is, prints one
 * JSON line of counts and exits 0. Background errors go to stderr as "error: ..." lines.
 */
import {
  OutboxRelay,
  ProjectionStack,
  RedisHashAuthority,
  RedisStore,
  RedisStreamsDispatchLog,
  ConversationService,
  type DispatchIdentity,
  type RelayOptions,
  type TopologyConfig,
} from "../../core/index.js";

const cfg = JSON.parse(process.argv[2]!) as {
  topology: TopologyConfig;
  keyPrefix: string;
  dispatch: DispatchIdentity;
  lowLatency: boolean;
  mode: "run" | "drain";
  relay?: Pick<RelayOptions, "fanoutChunkRecipients" | "fanoutChunksPerPass">;
};
const fail = (what: string) => (err: unknown) => process.stderr.write(`error: ${what}: ${err instanceof Error ? err.message : String(err)}\n`);
const store = new RedisStore(cfg.topology, { onError: fail("redis") });
const engine = new ConversationService(store, { keyPrefix: cfg.keyPrefix });
const log = new RedisStreamsDispatchLog(store, engine.keys, cfg.dispatch);
const background = cfg.mode === "run";
const stack = new ProjectionStack({ store, keys: engine.keys, conversations: engine, log, authority: new RedisHashAuthority(store, engine.keys) }, {
  background,
  projector: { pollIntervalMs: 20 },
  registration: { intervalMs: 20 },
  retentionMs: 0,
  log: (line) => process.stderr.write(`log: ${line}\n`),
  onError: fail("projection"),
});
const relay = new OutboxRelay(store, engine.keys, log, { ...cfg.relay, ...(cfg.lowLatency ? { onAppended: stack.lowLatency } : {}), onError: fail("relay") });

await log.ensureIdentity();
await stack.start();
if (cfg.mode === "run") {
  relay.start(20);
  process.stdout.write("ready\n");
} else {
  const relayed = await relay.drainAll();
  const projected = await stack.projector.catchUp();
  const registered = await stack.registration.drainAll();
  process.stdout.write(`${JSON.stringify({ relayed, projected, registered })}\n`, () => process.exit(0));
}
