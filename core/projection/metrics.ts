import { Counter, Gauge } from "prom-client";
import { registry } from "../metrics/index.js";

/** The session projection's metrics (ADR-0021 §4 "新增指标"). Registered in the process's one registry (core/metrics/). */
export const metrics = {
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
  consumedRecords: new Counter({
    name: "qim_session_projection_consumed_records_total",
    help: "Dispatch-log records the durable consumer of this process moved its checkpoint past (in a cluster: on the partitions it owns)",
    registers: [registry],
  }),
  projectedRecords: new Counter({
    name: "qim_session_projection_records_total",
    help: "Dispatch-log records the projection consumer applied, by path (durable, low_latency)",
    labelNames: ["path"] as const,
    registers: [registry],
  }),
  partitionVerdict: new Gauge({
    name: "qim_session_projection_partition_verdict",
    help: "The dispatch-log partition's audit verdict as the consumer last saw it: 1 for the current verdict (OK, NO_CHECKPOINT, OVER_WINDOW, BEYOND_HIGH, IDENTITY_MISMATCH), 0 for the others; by partition",
    labelNames: ["partition", "verdict"] as const,
    registers: [registry],
  }),
  checkpointLag: new Gauge({
    name: "qim_session_projection_checkpoint_lag",
    help: "Records appended to the dispatch-log partition and not yet consumed by the session projection (high watermark - checkpoint); absent while the partition has no usable checkpoint; by partition",
    labelNames: ["partition"] as const,
    registers: [registry],
  }),
  queueDepth: new Gauge({
    name: "qim_session_conversation_state_queue_depth",
    help: "Pending registrations (ucs_pending) not yet written to the conversation-set authority, summed per Redis instance; read with the projection status",
    labelNames: ["redis_instance"] as const,
    registers: [registry],
  }),
  deadLetterQueueDepth: new Gauge({
    name: "qim_session_conversation_state_dead_letter_queue_depth",
    help: "Dead letters kept (ucs_dead: pending registrations that could not be decoded, for an operator to inspect), summed per Redis instance; read with the projection status",
    labelNames: ["redis_instance"] as const,
    registers: [registry],
  }),
  projectionEpoch: new Gauge({
    name: "qim_session_projection_epoch",
    help: "The session projection epoch this process last saw",
    registers: [registry],
  }),
};
