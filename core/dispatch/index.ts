/**
 * The dispatch module: the partitioned dispatch log (Redis Streams behind the DispatchLog
 * interface) and the outbox relay that moves RECORDED commits into it. Owns the log's keys
 * (`{dNNN}`), the scripts of lua/dispatch/ and the relay's metrics.
 */
export { dispatchIdentityKey, dispatchPartitionKey } from "./keys.js";
export * from "./log.js";
export * from "./relay.js";
