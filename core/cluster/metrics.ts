import { Counter, Gauge } from "prom-client";
import { registry } from "../metrics/index.js";

/** The engine cluster's metrics, in the process's one registry (core/metrics/). */
export const metrics = {
  ownedUnits: new Gauge({
    name: "qim_cluster_owned_units",
    help: "Units of work this node owns, by kind (relay bucket, dispatch partition, user slot)",
    labelNames: ["kind"] as const,
    registers: [registry],
  }),
  acquisitions: new Counter({
    name: "qim_cluster_acquisitions_total",
    help: "Units this node took (compare-and-set on the observed owner, token bumped), by kind",
    labelNames: ["kind"] as const,
    registers: [registry],
  }),
  releases: new Counter({
    name: "qim_cluster_releases_total",
    help: "Units this node gave up after its work on them stopped (rebalance, drain, stop), by kind",
    labelNames: ["kind"] as const,
    registers: [registry],
  }),
  reassignments: new Counter({
    name: "qim_cluster_reassignments_total",
    help: "Units this node took from a dead owner, or lost to another node without releasing them, by kind",
    labelNames: ["kind", "direction"] as const,
    registers: [registry],
  }),
  fencedRefusals: new Counter({
    name: "qim_cluster_fenced_refusals_total",
    help: "Writes refused because the unit's lease names another owner or a newer fencing token, by kind and write",
    labelNames: ["kind", "write"] as const,
    registers: [registry],
  }),
  heartbeatAge: new Gauge({
    name: "qim_cluster_heartbeat_age_seconds",
    help: "Time since this node's last heartbeat that Redis accepted (as of the node's last tick)",
    registers: [registry],
  }),
  liveNodes: new Gauge({
    name: "qim_cluster_live_nodes",
    help: "Nodes whose heartbeat is younger than the lease TTL, by Redis's clock (as of this node's last tick)",
    registers: [registry],
  }),
  kindNodes: new Gauge({
    name: "qim_cluster_kind_nodes",
    help: "Live non-draining nodes that take each kind of unit (cluster.units), as of this node's last tick; 0: that kind's work waits",
    labelNames: ["kind"] as const,
    registers: [registry],
  }),
};
