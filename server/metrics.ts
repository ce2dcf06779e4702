import { Counter } from "prom-client";
import { registry } from "../core/metrics/index.js";

/** The admin server's own metrics, beside the engine's, in the process's one registry (core/metrics/). */
export const metrics = {
  auditWriteFailures: new Counter({
    name: "qim_admin_audit_write_failures_total",
    help: "Audit records that could not be written and synced to the audit log (disk full, file size limit, I/O error); each mutating or refused call among them was answered INTERNAL",
    registers: [registry],
  }),
  auditRotations: new Counter({
    name: "qim_admin_audit_rotations_total",
    help: "Size-based rotations of the audit log (FILE became FILE.1)",
    registers: [registry],
  }),
  auditRotationFailures: new Counter({
    name: "qim_admin_audit_rotation_failures_total",
    help: "Audit log rotations that failed (the log writes on in FILE, nothing lost; the next attempt waits until it has grown by another max size): alert on any increase, the file now grows past its bound",
    registers: [registry],
  }),
  callsAbandoned: new Counter({
    name: "qim_server_calls_abandoned_total",
    help: "Calls that ended because their caller went away (reason=cancelled) or their deadline passed (reason=deadline): refused before their handler ran, or a read stopped at its next step. A rise on one rpc says its callers give up on it (too slow, or a deadline too short)",
    labelNames: ["rpc", "reason"] as const,
    registers: [registry],
  }),
};
