import { Counter } from "prom-client";
import { registry } from "../metrics/index.js";

/** The CMD log's metrics, in the process's one registry. */
export const logMetrics = {
  commits: new Counter({
    name: "qim_cmd_log_commits_total",
    help: "CMD sends by outcome: durable (a seq allocated), duplicate (client_msg_no seen before), no_persist (delivered only, nothing durable)",
    labelNames: ["outcome"] as const,
    registers: [registry],
  }),
};
