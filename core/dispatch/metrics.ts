import { Counter } from "prom-client";
import { registry } from "../metrics/index.js";

/** The dispatch module's metrics (the outbox relay). Registered in the process's one registry (core/metrics/). */
export const metrics = {
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
};
