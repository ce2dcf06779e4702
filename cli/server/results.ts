/** The JSON result of `server start`: printed once the server listens. */
export interface ServerStartResult {
  listen: string;
  port: number;
  /** null with --metrics-listen off. */
  metricsPort: number | null;
  tls: boolean;
  auditLog: string;
}

/** The JSON result of `server config` (= qim-admin-server --print-config): the effective settings, passwords redacted. */
export interface ServerConfigResult {
  /** The config file read, or null. */
  config: string | null;
  /** Nested as in the config file. */
  settings: Record<string, unknown>;
  /** Dotted key → where its value came from. */
  sources: Record<string, "flag" | "env" | "file" | "default">;
  /** Required settings given nowhere (then the command exits 2): the key, its flag (or null), its environment variables, the refusal. */
  missing: { key: string; flag: string | null; env: string[]; message: string }[];
}
