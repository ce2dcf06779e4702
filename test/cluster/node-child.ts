/**
 * One engine server as a node of a cluster, in a process of its own, for the node-RPC tests:
 *   node node-child.js '<json config>'
 *   { redisAddr, listen, metricsListen, auditLog, ca, cert, key, nodeId, nodeCert, nodeKey, leaseTtlMs, heartbeatIntervalMs }
 * startAdminServer with cluster options and its node service on a port the OS chooses, over mTLS
 * with the node certificate — what qim-admin-server does with the node.* settings — logging to
 * stderr as qim-admin-server does; SIGTERM stops it cleanly (its units handed over).
 */
import { readFileSync } from "node:fs";
import { startAdminServer } from "../../server/node.js";

const cfg = JSON.parse(process.argv[2]!) as {
  redisAddr: string; listen: string; metricsListen: string; auditLog: string; ca: string; cert: string; key: string;
  nodeId: string; nodeCert: string; nodeKey: string; leaseTtlMs: number; heartbeatIntervalMs: number;
};
const ca = readFileSync(cfg.ca);
const server = await startAdminServer({
  topology: { kind: "instances", addrs: [cfg.redisAddr] },
  listen: cfg.listen,
  metricsListen: cfg.metricsListen,
  auditPath: cfg.auditLog,
  auditSync: false,
  tls: { caPem: ca, certPem: readFileSync(cfg.cert), keyPem: readFileSync(cfg.key) },
  cluster: { nodeId: cfg.nodeId, address: "", version: "test", leaseTtlMs: cfg.leaseTtlMs, heartbeatIntervalMs: cfg.heartbeatIntervalMs },
  node: { listen: "127.0.0.1:0", tls: { caPem: ca, certPem: readFileSync(cfg.nodeCert), keyPem: readFileSync(cfg.nodeKey) } },
});
process.once("SIGTERM", () => {
  server.close().then(() => process.exit(0), (err: unknown) => {
    process.stderr.write(`shutdown failed: ${String(err)}\n`);
    process.exit(1);
  });
});
