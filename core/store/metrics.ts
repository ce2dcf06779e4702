import { Counter, Gauge } from "prom-client";
import { registry } from "../metrics/index.js";

/** The store's metrics. Registered in the process's one registry (core/metrics/). */
export const metrics = {
  reachable: new Gauge({
    name: "qim_store_reachable",
    help: "1 when the Redis instance (a Cluster counts as one) answered the last health probe's PING and does not refuse this process's credentials or TLS, else 0; by redis_instance (its index in QIM_REDIS_ADDR then QIM_MESSAGE_STORE_ADDRS) and addr",
    labelNames: ["redis_instance", "addr"] as const,
    registers: [registry],
  }),
  replicaAckFailures: new Counter({
    name: "qim_store_replica_ack_failures_total",
    help: "commit acknowledgements failed because fewer replicas than redis.ack_replicas confirmed the write within redis.ack_timeout (WAIT), or WAIT itself failed; the client retries (issue 26)",
    registers: [registry],
  }),
};
