import { Counter, Gauge } from "prom-client";
import { registry } from "../metrics/index.js";

/** The conversation list's metrics (spec 002 §3.4, §8), in the process's one registry. */
export const metrics = {
  rowWrites: new Counter({
    name: "qim_conversation_list_row_writes_total",
    help: "Persistent conversation-list row writes (one per (user, conversation) per flush or action; spec 002 §8 counts these per compaction window)",
    registers: [registry],
  }),
  liveMerged: new Counter({
    name: "qim_conversation_list_live_merged_total",
    help: "Live reads saved: changes of a watched user folded into a publication that an earlier change of the user, within LIVE_PUBLISH_INTERVAL_MS, already made due",
    registers: [registry],
  }),
  liveChanges: new Counter({
    name: "qim_conversation_list_live_changes_total",
    help: "Changes published on the low-latency path before their rows are stored (live rows and badge of a user someone looks at; written at the window's flush)",
    registers: [registry],
  }),
  lowLatencyRecords: new Counter({
    name: "qim_conversation_list_low_latency_records_total",
    help: "Dispatch records the conversation-list consumer took from the relay's low-latency hand-off (before its log read reached them)",
    registers: [registry],
  }),
  consumedRecords: new Counter({
    name: "qim_conversation_list_consumed_records_total",
    help: "Dispatch records the conversation-list consumer read (on a cluster node: of the partitions it owns)",
    registers: [registry],
  }),
  flushes: new Counter({
    name: "qim_conversation_list_flushes_total",
    help: "Compaction flushes of the conversation-list consumer, by reason (window, pending_limit, stop)",
    labelNames: ["reason"] as const,
    registers: [registry],
  }),
  recomputes: new Counter({
    name: "qim_conversation_list_recompute_total",
    help: "Bounded recomputes of a row from the history (spec 002 §3.2 (c), §3.3), by cause",
    labelNames: ["cause"] as const,
    registers: [registry],
  }),
  conflicts: new Counter({
    name: "qim_conversation_list_row_conflicts_total",
    help: "Row writes refused because the stored row moved since it was read (retried from the stored row)",
    registers: [registry],
  }),
  driftRatio: new Gauge({
    name: "unread_drift_ratio",
    help: "Share of the conversations sampled by the last unread audit whose cached unread or mentions differed from the definitional value (spec 002 §3.4)",
    registers: [registry],
  }),
  checkpointLost: new Counter({
    name: "qim_conversation_list_checkpoint_lost_total",
    help: "Times the conversation-list consumer found its checkpoint behind the dispatch log's low watermark and continued from it (rows of the lost records are corrected by reconcile)",
    registers: [registry],
  }),
  reconciles: new Counter({
    name: "qim_conversation_list_reconcile_total",
    help: "Reconciles of a user's rows and badge run by a spec 002 §3.4 trigger (login, mailbox_dirty: a session projection rebuild, rollback: a checkpoint behind the log's low watermark, audit: drift the background audit found)",
    labelNames: ["trigger"] as const,
    registers: [registry],
  }),
  reconcilesBounded: new Counter({
    name: "qim_conversation_list_reconcile_rate_limited_total",
    help: "Reconcile triggers (login, mailbox_dirty) not run because the user was reconciled for the same trigger within the last minute (RECONCILE_MIN_INTERVAL_MS) or is being reconciled",
    labelNames: ["trigger"] as const,
    registers: [registry],
  }),
  rollbackPending: new Gauge({
    name: "qim_conversation_list_rollback_reconcile_pending",
    help: "Dispatch partitions whose lost records' rows the background rollback reconcile has not finished (0 when none)",
    registers: [registry],
  }),
  auditRows: new Counter({
    name: "qim_conversation_list_unread_audit_rows_total",
    help: "Rows the background unread audit examined, sampled (compared with the definition) and found drifted",
    labelNames: ["outcome"] as const,
    registers: [registry],
  }),
};
