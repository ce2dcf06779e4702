/** The JSON result of `server start`: printed once the server listens. */
export interface ServerStartResult {
  listen: string;
  port: number;
  /** null with --metrics-listen off. */
  metricsPort: number | null;
  tls: boolean;
  auditLog: string;
}
