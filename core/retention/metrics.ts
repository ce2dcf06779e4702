import { Counter, Gauge } from "prom-client";
import { registry } from "../metrics/index.js";

/** The retention module's metrics (issue 26), in the process's one registry. */
export const metrics = {
  trimmed: new Counter({
    name: "qim_retention_trimmed_records_total",
    help: "Records removed by retention, by kind (history: conversation history entries, unread_index, idempotency: conversation idempotency ids; cmd_history, cmd_idempotency: the same of CMD channels)",
    labelNames: ["kind"] as const,
    registers: [registry],
  }),
  skipped: new Counter({
    name: "qim_retention_skipped_total",
    help: "Conversation trims skipped for a round, by reason (pending: records still waiting for dispatch)",
    labelNames: ["reason"] as const,
    registers: [registry],
  }),
  behind: new Gauge({
    name: "qim_retention_behind_conversations",
    help: "Conversations this node left with more to trim at the end of its last round (the step cap was reached)",
    registers: [registry],
  }),
  lastRound: new Gauge({
    name: "qim_retention_last_round_completed_seconds",
    help: "Unix time at which this node last finished a trimming round over every bucket it owns",
    registers: [registry],
  }),
  rounds: new Counter({
    name: "qim_retention_rounds_total",
    help: "Trimming rounds over the buckets this node owns, by outcome (ok, error)",
    labelNames: ["outcome"] as const,
    registers: [registry],
  }),
};
