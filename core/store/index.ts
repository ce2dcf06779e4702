/** The Redis store: its clients (every script defined on each) and the routing of hash tags to them. */
export { reconnectDelay, RECONNECT_MAX_DELAY_MS, RedisStore, ReplicaAckError, REFUSED_RECONNECT_DELAY_MS, refusalOf, type RedisClient, type StoreOptions } from "./store.js";
