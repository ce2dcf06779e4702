import { Counter } from "prom-client";
import { registry } from "../metrics/index.js";

/** RTC signalling's metrics (issue 28), in the process's one registry. */
export const rtcMetrics = {
  signals: new Counter({
    name: "qim_rtc_signals_total",
    help: "RTC signals taken by this node, by kind (invite, accept, reject, cancel, end, sdp) and outcome (ringing, pushed, unreachable, busy, delivered, offline, refused)",
    labelNames: ["kind", "outcome"] as const,
    registers: [registry],
  }),
  pushes: new Counter({
    name: "qim_rtc_voip_pushes_total",
    help: "VoIP pushes of an INVITE to an offline callee's devices, by result (sent: handed to the push sink; quota: past rtc_voip_push_daily_quota; failed: the sink refused)",
    labelNames: ["result"] as const,
    registers: [registry],
  }),
  timeouts: new Counter({
    name: "qim_rtc_ring_timeouts_total",
    help: "Calls that rang for rtc_ring_timeout with no answer (both sides told RTC_TIMEOUT)",
    registers: [registry],
  }),
};
