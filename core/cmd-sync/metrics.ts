import { Counter, Gauge } from "prom-client";
import { registry } from "../metrics/index.js";

/**
 * Whether each live pending buffer's `.bad` file is still on disk (CmdPendingUpdater registers
 * one while it has a .bad file): qim_cmd_pending_file_bad is asked at every scrape, so the alert
 * clears when the operator deletes the file, without a restart.
 */
export const badPendingFileProbes = new Set<() => boolean>();

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
  pendingReplaysSkipped: new Counter({
    name: "qim_cmd_pending_replays_skipped_total",
    help: "(user, channel) intents that made no pending entry: the buffer had settled the same or newer values in the last CMD_SETTLED_MEMORY_MS (the catch-up scan's replays of flushed or acknowledged messages)",
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
  pendingFileBad: new Gauge({
    name: "qim_cmd_pending_file_bad",
    help: "1 while the CMD pending file this node set aside at start-up as <file>.bad (it did not decode) is still on disk, else 0",
    registers: [registry],
    collect() {
      this.set([...badPendingFileProbes].some((present) => present()) ? 1 : 0);
    },
  }),
  pendingFile: new Counter({
    name: "qim_cmd_pending_file_total",
    help: "Pending file events (loaded, saved, removed, bad: undecodable and renamed .bad, save_failed)",
    labelNames: ["event"] as const,
    registers: [registry],
  }),
  cassandraFenced: new Counter({
    name: "qim_cmd_cassandra_fenced_total",
    help: "CMD state writes on Cassandra refused by a fence, by layer (lease: the slot's lease in Redis names another owner or token)",
    labelNames: ["layer"] as const,
    registers: [registry],
  }),
  // the catch-up scan and slot recovery from the CMD log, and intents no owner accepted
  intentsNotAccepted: new Counter({
    name: "qim_cmd_intent_not_accepted_total",
    help: "Durable CMD sends whose conversation intent some owner group did not accept (the owners' catch-up scan derives it)",
    registers: [registry],
  }),
  scanEntries: new Counter({
    name: "qim_cmd_catchup_entries_total",
    help: "Recent-commit index entries the catch-up scan read (every node reads every CMD commit's entry)",
    registers: [registry],
  }),
  scanPushed: new Counter({
    name: "qim_cmd_catchup_intents_total",
    help: "Intents the catch-up scan and slot recovery pushed into this node's pending buffer (for the recipients whose slot it owns)",
    labelNames: ["path"] as const,
    registers: [registry],
  }),
  scanFailures: new Counter({
    name: "qim_cmd_catchup_failures_total",
    help: "Catch-up rounds, slot recoveries and flush-point writes that failed (retried on the next interval)",
    labelNames: ["what"] as const,
    registers: [registry],
  }),
  scanLag: new Gauge({
    name: "qim_cmd_catchup_lag_seconds",
    help: "Redis time minus the oldest bucket cursor of the catch-up scan after its last round",
    registers: [registry],
  }),
  flushPointWrites: new Counter({
    name: "qim_cmd_flush_point_writes_total",
    help: "Flush points of user slots raised (fenced writes), by result",
    labelNames: ["result"] as const,
    registers: [registry],
  }),
  recoveredSlots: new Counter({
    name: "qim_cmd_recovered_slots_total",
    help: "User slots taken over whose pending view was rebuilt from the CMD log past their flush point",
    registers: [registry],
  }),
};
