import { Counter, Gauge, Histogram } from "prom-client";
import { registry } from "../metrics/index.js";

/** The message-type registry's metrics (issue 29), in the process's one registry. */
export const registryMetrics = {
  reloads: new Counter({
    name: "qim_registry_reloads_total",
    help: "Reads of a tenant's message-type registry by this node, by result (unchanged: the version read was the one held; loaded: a new version was read whole; failed)",
    labelNames: ["result"] as const,
    registers: [registry],
  }),
  changes: new Counter({
    name: "qim_registry_changes_total",
    help: "Registry changes applied through this node (a version step), by result (applied, unchanged: nothing to change, conflict: the version moved, full)",
    labelNames: ["result"] as const,
    registers: [registry],
  }),
  tenants: new Gauge({
    name: "qim_registry_cached_tenants",
    help: "Tenants whose registry this node holds in memory (bounded by REGISTRY_CACHE_TENANTS_MAX)",
    registers: [registry],
  }),
  refused: new Counter({
    name: "qim_registry_refused_sends_total",
    help: "Sends refused by the registry, by reason (unknown_type, payload_too_large, reserved, class_unavailable)",
    labelNames: ["reason"] as const,
    registers: [registry],
  }),
  reloadSeconds: new Histogram({
    name: "qim_registry_reload_seconds",
    help: "Time of one reload read (the version check, and the whole registry when it moved)",
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5],
    registers: [registry],
  }),
};
