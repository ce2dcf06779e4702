import { Counter, Gauge } from "prom-client";
import { registry } from "../metrics/index.js";

/** The CMD log's and the catch-up scan's metrics, in the process's one registry. */
export const logMetrics = {
  commits: new Counter({
    name: "qim_cmd_log_commits_total",
    help: "CMD sends by outcome: durable (a seq allocated), duplicate (client_msg_no seen before), no_persist (delivered only, nothing durable)",
    labelNames: ["outcome"] as const,
    registers: [registry],
  }),
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
