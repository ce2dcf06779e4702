/**
 * A conversation-list consumer in a process of its own, for J-7 (spec 002 §9: a crash injected
 * mid-flush). It reads the whole dispatch log, then flushes, printing one line per user written;
 * the parent SIGKILLs it partway through. Configuration in the environment:
 *   QIM_LIST_CHILD='{ topology, keyPrefix, partitionCount }' node flush-child.js
 */
import { ConversationList, ConversationService, KeySpace, RedisHashAuthority, RedisStore, RedisStreamsDispatchLog, type TopologyConfig } from "../../../core/index.js";

const cfg = JSON.parse(process.env.QIM_LIST_CHILD ?? "") as { topology: TopologyConfig; keyPrefix: string; partitionCount: number };
const store = new RedisStore(cfg.topology);
const keys = new KeySpace(cfg.keyPrefix);
const conversations = new ConversationService(store, { keyPrefix: cfg.keyPrefix });
const log = new RedisStreamsDispatchLog(store, keys, { clusterId: "test", topicId: "dispatch", partitionCount: cfg.partitionCount });
const list = new ConversationList({ store, keys, conversations, log, authority: new RedisHashAuthority(store, keys) }, { compactor: { background: false } });
list.service.onChange((c) => process.stdout.write(`flushed ${c.user}\n`));
await list.compactor.load();
const read = await list.compactor.poll();
process.stdout.write(`read ${read}\n`);
await list.compactor.flush();
process.stdout.write("flushed all without dying\n");
await store.close();
