import { Counter } from "prom-client";
import { registry } from "../metrics/index.js";

/** The reactions' metrics (issue 28), in the process's one registry. */
export const reactionMetrics = {
  reactions: new Counter({
    name: "qim_reactions_total",
    help: "Reactions taken by this node, by action (add, remove) and result (changed, unchanged: idempotent repeat, refused)",
    labelNames: ["action", "result"] as const,
    registers: [registry],
  }),
  detailSkipped: new Counter({
    name: "qim_reactions_without_detail_total",
    help: "Reactions counted in the summary with no detail row (the group past reaction_detail_max_members or the message past reaction_detail_max_per_message)",
    registers: [registry],
  }),
  trimmed: new Counter({
    name: "qim_reactions_trimmed_total",
    help: "Messages whose reactions went with the message's history trim (retention)",
    registers: [registry],
  }),
};
