import { Counter, Gauge, Histogram, Registry } from "prom-client";

/**
 * The engine's metrics, named as in the spec (ADR-0021 "新增指标"). One registry per process;
 * the admin server exposes it on /metrics and streams it to the dashboard.
 */
export const registry = new Registry();

export const metrics = {
  membershipEvents: new Counter({
    name: "qim_writer_membership_events_total",
    help: "Membership CONTROL messages committed, by op (join, leave, remove)",
    labelNames: ["op"] as const,
    registers: [registry],
  }),
  membershipRetries: new Counter({
    name: "qim_writer_membership_retry_total",
    help: "Re-freezes after the member version moved between planning and the committing script, by path (send, membership)",
    labelNames: ["path"] as const,
    registers: [registry],
  }),
  messagesCommitted: new Counter({
    name: "qim_writer_messages_committed_total",
    help: "Group messages committed (RECORDED) by the writer",
    registers: [registry],
  }),
  commitBatchSize: new Histogram({
    name: "qim_writer_commit_batch_size",
    help: "Messages carried by one commit script call (group commit)",
    buckets: [1, 2, 4, 8, 16, 32, 64, 128],
    registers: [registry],
  }),
  relayDispatched: new Counter({
    name: "qim_relay_dispatched_total",
    help: "Commits the outbox relay appended to the dispatch log and marked COMMITTED",
    registers: [registry],
  }),
  lowLatencySkipped: new Counter({
    name: "qim_relay_low_latency_skipped_total",
    help: "Records not handed to the session projection's low-latency path because it was busy (the durable consumer projects them from the log)",
    registers: [registry],
  }),
  ucsPending: new Counter({
    name: "qim_session_conversation_state_pending_total",
    help: "Conversations that entered a user's projection and were queued for the conversation-set authority",
    registers: [registry],
  }),
  ucsWritten: new Counter({
    name: "qim_session_conversation_state_written_total",
    help: "Pending registrations written to the conversation-set authority and popped from their queue",
    registers: [registry],
  }),
  ucsFailures: new Counter({
    name: "qim_session_conversation_state_failures_total",
    help: "Registration batches the authority refused or that failed (retried on the next pass)",
    registers: [registry],
  }),
  ucsDeadLettered: new Counter({
    name: "qim_session_conversation_state_dead_letter_total",
    help: "Pending registrations that could not be decoded, moved from ucs_pending to ucs_dead so they stop blocking their queue",
    registers: [registry],
  }),
  groupIntervalMissing: new Counter({
    name: "qim_session_group_interval_missing_total",
    help: "Group conversations in a user's session list for which the user has no membership interval (spec 000: always zero; non-zero means the projection and membership disagree)",
    registers: [registry],
  }),
  userRebuilt: new Counter({
    name: "qim_session_projection_user_rebuilt_total",
    help: "Users whose session list was rebuilt from the authority because their epoch mark was behind",
    registers: [registry],
  }),
  projectedRecords: new Counter({
    name: "qim_session_projection_records_total",
    help: "Dispatch-log records the projection consumer applied, by path (durable, low_latency)",
    labelNames: ["path"] as const,
    registers: [registry],
  }),
  projectionEpoch: new Gauge({
    name: "qim_session_projection_epoch",
    help: "The session projection epoch this process last saw",
    registers: [registry],
  }),
};
