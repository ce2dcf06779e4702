import { Counter } from "prom-client";
import { registry } from "../../core/metrics/index.js";

/** The node service's metrics (issue 11), in the process's one registry (core/metrics/). */
export const nodeMetrics = {
  /** Calls a NodeRouter made, by RPC and outcome: OK, STALE_OWNER, REJECTED (NodeStatus), or the gRPC code of a transport failure, NO_OWNER. */
  calls: new Counter({
    name: "qim_node_rpc_calls_total",
    help: "Node-to-node RPC calls this node made (a local call when this node is the owner counts too), by rpc and status: OK, STALE_OWNER, REJECTED, NO_OWNER, or the gRPC code of a failed call",
    labelNames: ["rpc", "target", "status"] as const,
    registers: [registry],
  }),
  /** Calls this node's NodeService answered, by RPC and status. */
  served: new Counter({
    name: "qim_node_rpc_served_total",
    help: "NodeService calls this node answered, by rpc and status (OK, STALE_OWNER, REJECTED, PERMISSION_DENIED)",
    labelNames: ["rpc", "status"] as const,
    registers: [registry],
  }),
  kicksForwarded: new Counter({
    name: "qim_relay_kicks_forwarded_total",
    help: "Relay buckets whose commit on this node was forwarded to the bucket's owner as a NodeService Kick and accepted by it",
    registers: [registry],
  }),
  kicksForwardFailed: new Counter({
    name: "qim_relay_kicks_forward_failed_total",
    help: "Relay buckets whose forwarded kick did not reach an owner that accepted it (harmless: the owner's sweep relays the commit)",
    registers: [registry],
  }),
};
