/**
 * Presence subscriptions (spec 003 §2.1, issue 28, docs/gateway.md "Presence"): a device watches
 * whether members of a group it is in are online; PRESENCE_UPDATE frames carry absolute states,
 * merged per connection over PRESENCE_PUSH_MERGE_WINDOW_MS. Online only, never stored: the
 * watches are each node's memory; Redis holds only which nodes watch a user
 * (`{uNNN}:presence:watch:*`), so that a change is told to just those nodes. Owns those keys and
 * the `qim_presence_*` metrics.
 */
export { presenceWatchKey } from "./keys.js";
export { LocalPresence, type PresenceConnection, type PresenceState } from "./local.js";
export { presenceMetrics } from "./metrics.js";
export {
  Presence, PRESENCE_NODES_CHECK_MS, PRESENCE_RECHECK_MS, PRESENCE_WATCH_TTL_MS, PresenceRateLimitedError, type PresenceDeps, type PresenceOptions, type SubscribeResult,
} from "./presence.js";
