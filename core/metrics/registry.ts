import { Registry } from "prom-client";

/**
 * The process's one metrics registry: each module registers its own metrics in it (named as in
 * the spec, e.g. ADR-0021 "新增指标"), the admin server exposes it on /metrics and streams it to
 * the dashboard.
 */
export const registry = new Registry();
