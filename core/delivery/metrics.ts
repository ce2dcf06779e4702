import { Counter, Gauge, Histogram } from "prom-client";
import { registry } from "../metrics/index.js";

/** The delivery module's metrics (issue 27), in the process's one registry. */
export const metrics = {
  records: new Counter({
    name: "qim_delivery_records_total",
    help: "Dispatch records the delivery consumer of this node read from the partitions it owns",
    registers: [registry],
  }),
  deliveries: new Counter({
    name: "qim_delivery_pushes_total",
    help: "Messages handed to an online connection of this node (one per connection and message)",
    registers: [registry],
  }),
  memberReads: new Counter({
    name: "qim_delivery_member_reads_total",
    help: "Member entries read to find a large group message's audience among this node's connections (connected: their entries; members: a scan of the group)",
    labelNames: ["how"] as const,
    registers: [registry],
  }),
  memberCache: new Counter({
    name: "qim_delivery_member_cache_total",
    help: "Audiences of large group messages found from the kept member entries of this node's users, by outcome (hit; partial: users connected since were read; changed: the member version moved; miss)",
    labelNames: ["outcome"] as const,
    registers: [registry],
  }),
  membersRecords: new Counter({
    name: "qim_delivery_members_records_total",
    help: "Large group messages pushed from their one members record (found among the connections of each node that has any), not from the fanout job's chunks",
    registers: [registry],
  }),
  forwarded: new Counter({
    name: "qim_delivery_forwarded_total",
    help: "Delivery batches sent to another node that holds recipients' connections, by outcome (ok, failed)",
    labelNames: ["outcome"] as const,
    registers: [registry],
  }),
  dropped: new Counter({
    name: "qim_delivery_dropped_total",
    help: "Pushes not made, by reason (slow: the connection was past its soft mark; gone: the connection closed first)",
    labelNames: ["reason"] as const,
    registers: [registry],
  }),
  lag: new Histogram({
    name: "qim_delivery_commit_to_push_seconds",
    help: "From a message's commit (its created_at) to its push onto a connection of this node",
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  }),
  connections: new Gauge({
    name: "qim_delivery_online_connections",
    help: "Device connections registered on this node",
    registers: [registry],
  }),
  users: new Gauge({
    name: "qim_delivery_online_users",
    help: "Users with at least one device connection on this node",
    registers: [registry],
  }),
  readMarks: new Counter({
    name: "qim_delivery_read_marks_total",
    help: "MARK_READs taken into a read-sync merge window on this node",
    registers: [registry],
  }),
  readMarksMerged: new Counter({
    name: "qim_delivery_read_marks_merged_total",
    help: "MARK_READs that joined a window already open for the same user and conversation (no event of their own)",
    registers: [registry],
  }),
  readSyncEvents: new Counter({
    name: "qim_delivery_read_sync_events_total",
    help: "Read-sync events sent to a user's other devices (one per merge window)",
    registers: [registry],
  }),
  events: new Counter({
    name: "qim_delivery_user_event_pushes_total",
    help: "User events (read sync) and conversation events (reaction summaries) handed to a connection of this node, by kind",
    labelNames: ["kind"] as const,
    registers: [registry],
  }),
  typingMerged: new Counter({
    name: "qim_delivery_typing_unchanged_total",
    help: "TYPINGs not passed on: the same as the user's last one in the conversation within TYPING_MIN_INTERVAL_MS",
    registers: [registry],
  }),
  conversationEvents: new Counter({
    name: "qim_delivery_conversation_events_total",
    help: "Conversation events (reaction summaries) at this node's merge window, by kind and outcome (sent: pushed now; held: waits out the window, replacing one held; stale: older than one sent or held; dropped: past REACTION_MERGE_MAX_PENDING)",
    labelNames: ["kind", "outcome"] as const,
    registers: [registry],
  }),
  sessionRelayed: new Counter({
    name: "qim_delivery_session_changes_relayed_total",
    help: "Changes of users' conversation lists made here and sent to the node holding their devices, by outcome (ok, failed)",
    labelNames: ["outcome"] as const,
    registers: [registry],
  }),
  sessionRelayDropped: new Counter({
    name: "qim_delivery_session_changes_dropped_total",
    help: "List changes dropped before relaying because more than SESSION_RELAY_MAX_PENDING were held",
    registers: [registry],
  }),
  kicked: new Counter({
    name: "qim_delivery_connections_kicked_total",
    help: "Device connections of this node closed by an operator (qimctl connections kick)",
    registers: [registry],
  }),
  reconnectHints: new Counter({
    name: "qim_delivery_reconnect_hints_total",
    help: "RECONNECT hints sent to device connections of this node because it drains",
    registers: [registry],
  }),
  checkpointRefused: new Counter({
    name: "qim_delivery_checkpoint_refused_total",
    help: "Delivery checkpoint moves refused, by reason (fenced: a newer owner holds the partition; moved: another consumer moved it first); the records are pushed again by whoever owns the partition (devices dedupe)",
    labelNames: ["reason"] as const, registers: [registry],
  }),
  checkpointLag: new Gauge({
    name: "qim_delivery_checkpoint_lag",
    help: "Records appended to a partition this node owns but not yet delivered",
    labelNames: ["partition"] as const,
    registers: [registry],
  }),
  transient: new Counter({
    name: "qim_delivery_transient_total",
    help: "Messages never stored (an ephemeral type's) pushed to the online members of their group from this node",
    registers: [registry],
  }),
};
