/**
 * The dispatch module: the partitioned dispatch log (Redis Streams behind the DispatchLog
 * interface) and the outbox relay that moves RECORDED commits into it. Owns the log's keys
 * (`{dNNN}`) and the fanout jobs beside each bucket's outbox (`{bNNN}`), the scripts of lua/dispatch/ and the relay's metrics.
 */
export { bucketConversationsKey, dispatchIdentityKey, dispatchPartitionKey, fanoutKeys, type FanoutKeys } from "./keys.js";
export { AppendedRecords, DISPATCH_APPENDED_KEEP_RECIPIENTS } from "./appended.js";
export * from "./log.js";
export * from "./relay.js";
