/**
 * Delivery to online devices (issue 27): this node's device connections (LocalConnections, the
 * gateway adds and removes them), where users are online across the cluster (OnlineRegistry,
 * Redis on the users' slot tags, counted only with a live node's incarnation), and the consumer
 * of the dispatch log that pushes every committed message to the online devices of its frozen
 * audience, here or through the node that holds them. Owns `{uNNN}:online:*`, `{g000}:online:nodes`,
 * `{dNNN}:delivery:*` and the `qim_delivery_*` metrics. docs/gateway.md, "Delivery".
 */
export { deliveryCheckpointKey, onlineKey } from "./keys.js";
export {
  LocalConnections, type ConversationEvent, type DeliveryBatch, type DeliveryItem, type DeviceConnection, type PresenceHooks, type ReactionEvent, type ReadSyncEvent, type RtcEvent, type TypingEvent, type UserEvent, type UserEventBatch,
} from "./local.js";
export { ConversationEvents, type ConversationEventsOptions } from "./conversation-events.js";
export { SESSION_RELAY_MAX_PENDING, SESSION_RELAY_WINDOW_MS, SessionRelay, type RelayedChange, type SessionChangeForwarder } from "./session-relay.js";
export { CONNECTIONS_LIST_LIMIT, ConnectionsView, type ConnectionPeers, type ConnectionQuery, type ConnectionRow, type ConnectionsAnswer, type PeerNode } from "./operators.js";
export { READ_SYNC_MERGE_WINDOW_MS, ReadSync, type UserEventForwarder } from "./read-sync.js";
export { LOCATE_CHUNK, ONLINE_ENTRY_TTL_MS, ONLINE_NODES_CACHE_MS, ONLINE_REFRESH_MS, OnlineRegistry, type LiveNode, type Located, type RegistryCluster } from "./registry.js";
export {
  DELIVERY_FORWARD_ATTEMPTS, DELIVERY_FORWARD_MAX_BYTES, DELIVERY_FORWARD_MAX_USERS, DELIVERY_POLL_INTERVAL_MS, DELIVERY_READ_BATCH, DeliveryConsumer, type DeliveryConsumerOptions, type DeliveryForwarder,
} from "./consumer.js";
export { Delivery, TYPING_SEEN_MAX, type DeliveryOptions, type PresenceListener } from "./delivery.js";
export { MEMBER_READS_IN_FLIGHT, MEMBERS_CACHE_ENTRIES, MEMBERS_CACHE_GROUPS, MEMBERS_PREFETCH_MAX, MembersAudience, visibleAt, type MembersMessage } from "./members.js";
