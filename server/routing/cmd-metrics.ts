import { Counter } from "prom-client";
import { registry } from "../../core/metrics/index.js";

/** The CMD sync surfaces' metrics (issue 13), in the process's one registry (core/metrics/). */
export const cmdSurfaceMetrics = {
  /**
   * Owner groups of CMD intents this node routed after a commit, by target (local: this node's
   * buffer; remote: a peer's PushIntents) and outcome: OK, DROPPED (a full buffer), STALE_OWNER
   * (re-routed once), REJECTED, NO_OWNER, FAILED (transport). Anything but OK is derived again by
   * the owner's catch-up scan.
   */
  intentsRouted: new Counter({
    name: "qim_cmd_intents_routed_total",
    help: "CMD intent owner groups this node routed after a commit, by target (local, remote) and outcome (OK, DROPPED, STALE_OWNER, REJECTED, NO_OWNER, FAILED); anything but OK is re-derived by the owner's catch-up scan",
    labelNames: ["target", "outcome"] as const,
    registers: [registry],
  }),
  /** Intents this node's PushIntents received, by status. */
  intentsReceived: new Counter({
    name: "qim_cmd_intents_received_total",
    help: "CMD intents peers pushed to this node (NodeService PushIntents), by status: OK, DROPPED (full buffer), STALE_OWNER, REJECTED",
    labelNames: ["status"] as const,
    registers: [registry],
  }),
  /** HTTP /message/sync and /message/syncack requests, by path and HTTP status. */
  httpRequests: new Counter({
    name: "qim_cmd_http_requests_total",
    help: "CMD sync HTTP API requests (/message/sync, /message/syncack), by path and HTTP status (403: not a service certificate)",
    labelNames: ["path", "status"] as const,
    registers: [registry],
  }),
};
