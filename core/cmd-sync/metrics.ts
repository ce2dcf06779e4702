import { Counter, Gauge } from "prom-client";
import { registry } from "../metrics/index.js";

/** The CMD sync core's metrics (pending buffer, durable state, sync/ack), in the process's one registry. */
export const cmdMetrics = {
  pendingEntries: new Gauge({
    name: "qim_cmd_pending_entries",
    help: "(user, CMD channel) entries in this node's pending buffer, not yet flushed",
    registers: [registry],
  }),
  intents: new Counter({
    name: "qim_cmd_intents_total",
    help: "CMD conversation intents offered to this node's pending buffer, by outcome (accepted, dropped: queue full)",
    labelNames: ["outcome"] as const,
    registers: [registry],
  }),
  pendingDropped: new Counter({
    name: "qim_cmd_pending_dropped_total",
    help: "Pending (user, channel) entries given up: the queue was full, or their slot was lost (the successor re-derives them)",
    labelNames: ["reason"] as const,
    registers: [registry],
  }),
  flushes: new Counter({
    name: "qim_cmd_flushes_total",
    help: "Flushes of the pending buffer to the durable state, by outcome (ok, failed: at least one batch failed)",
    labelNames: ["outcome"] as const,
    registers: [registry],
  }),
  flushedRows: new Counter({
    name: "qim_cmd_flushed_rows_total",
    help: "(user, channel) rows written to the durable CMD state by successful flush batches",
    registers: [registry],
  }),
  flushFailures: new Counter({
    name: "qim_cmd_flush_failures_total",
    help: "Flush batches that failed (the batch stays pending and is retried by the next flush)",
    registers: [registry],
  }),
  syncs: new Counter({
    name: "qim_cmd_syncs_total",
    help: "CMD syncs answered by this node, by outcome (ok, error)",
    labelNames: ["outcome"] as const,
    registers: [registry],
  }),
  syncMessages: new Counter({
    name: "qim_cmd_sync_messages_total",
    help: "CMD messages returned by syncs",
    registers: [registry],
  }),
  acks: new Counter({
    name: "qim_cmd_acks_total",
    help: "CMD sync acks applied by this node, by outcome (ok, empty: no record of the latest sync, warning: clean-up failed after the durable write, error)",
    labelNames: ["outcome"] as const,
    registers: [registry],
  }),
  pendingFile: new Counter({
    name: "qim_cmd_pending_file_total",
    help: "Pending file events (loaded, saved, removed, bad: undecodable and renamed .bad, save_failed)",
    labelNames: ["event"] as const,
    registers: [registry],
  }),
  cassandraLwtRetries: new Counter({
    name: "qim_cmd_cassandra_lwt_retries_total",
    help: "Conditional writes of the CMD state on Cassandra not applied because a row changed since it was read (re-read and retried)",
    registers: [registry],
  }),
  cassandraFenced: new Counter({
    name: "qim_cmd_cassandra_fenced_total",
    help: "CMD state writes on Cassandra refused by a fence, by layer (lease: the slot's lease in Redis names another owner or token; row: a row was written with a newer token)",
    labelNames: ["layer"] as const,
    registers: [registry],
  }),
};
