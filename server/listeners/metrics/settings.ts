// The metrics listener's settings (engine-free: the CLI reads them for `server start --help`).
import type { ListenerSettings } from "../../listener.js";

export interface MetricsOptions {
  /** host:port for plain-HTTP /metrics; null or absent turns it off. */
  metricsListen?: string | null;
}

export const METRICS_DEFAULTS = { metricsListen: "127.0.0.1:9464" } as const;

export const metricsSettings: ListenerSettings<{ metricsListen: string | null }, MetricsOptions, typeof METRICS_DEFAULTS> = {
  defaults: METRICS_DEFAULTS,
  specs: [{
    section: "server", after: "listen",
    specs: [{ key: "metrics_listen", kind: "address-or-off", default: METRICS_DEFAULTS.metricsListen, description: "plain-HTTP /metrics address host:port, or off" }],
  }],
  typed: (r) => ({ metricsListen: (r.values.get("metrics_listen") as string | null | undefined) ?? null }),
  options: async (s) => ({ metricsListen: s.metricsListen }),
};
