import { Counter, Histogram } from "prom-client";
import { registry } from "../metrics/index.js";

/** The conversation module's metrics (the writer: ADR-0021 "新增指标"). Registered in the process's one registry (core/metrics/). */
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
};
