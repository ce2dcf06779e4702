/** Contract samples of `dev up`, `dev status`, `dev restart` and `dev down` (test/cli/result-samples.ts). */
import type DevDown from "../../../cli/commands/dev/down.js";
import type DevRestart from "../../../cli/commands/dev/restart.js";
import type DevStatus from "../../../cli/commands/dev/status.js";
import type DevUp from "../../../cli/commands/dev/up.js";
import { samplesOf, type ResultOf } from "../result-samples.js";

const secureAccess = { secure: true, user: "qim", tlsPort: 32971, passwordFile: "/home/alice/qim/.qim/dev/redis.password", ca: "/home/alice/qim/.qim/dev/pki/ca.crt" };

const up: ResultOf<typeof DevUp> = {
  dataDir: "/home/alice/qim/.qim/dev",
  startedAt: "2026-11-30T00:08:42.697Z",
  tenant: "1d63fa11-ec98-45d9-8df7-44f9956204a9",
  endpoint: "localhost:45307",
  authority: "redis-hash (development fallback, not an authority guarantee; keys qim:{uNNN}:ucs:*)",
  authorityKind: "redis-hash",
  redis: { pid: 9462, port: 32971, addr: "127.0.0.1:32971", version: "7.0.15", dataDir: "/home/alice/qim/.qim/dev/redis", log: "/home/alice/qim/.qim/dev/redis.log" },
  redisAccess: { secure: false, user: null, tlsPort: null, passwordFile: null, ca: null },
  server: {
    pid: 9467,
    port: 45307,
    listen: "127.0.0.1:45307",
    metricsPort: 33749,
    metricsUrl: "http://127.0.0.1:33749/metrics",
    log: "/home/alice/qim/.qim/dev/server.log",
    auditLog: "/home/alice/qim/.qim/dev/audit.log",
  },
  nodes: [
    { nodeId: "dev-1", pid: 9467, port: 45307, metricsPort: 33749, metricsUrl: "http://127.0.0.1:33749/metrics", log: "/home/alice/qim/.qim/dev/server.log", auditLog: "/home/alice/qim/.qim/dev/audit.log", syncUrl: "https://127.0.0.1:40215", gatewayUrl: "wss://localhost:40217", units: ["relay", "partition", "slot"] },
    { nodeId: "dev-2", pid: 9471, port: 45311, metricsPort: 33755, metricsUrl: "http://127.0.0.1:33755/metrics", log: "/home/alice/qim/.qim/dev/server-2.log", auditLog: "/home/alice/qim/.qim/dev/audit-2.log", syncUrl: "https://127.0.0.1:40219", gatewayUrl: "wss://localhost:40221", units: ["relay", "partition", "slot"] },
  ],
  pki: { dir: "/home/alice/qim/.qim/dev/pki", ca: "/home/alice/qim/.qim/dev/pki/ca.crt", cert: "/home/alice/qim/.qim/dev/pki/admin.crt", key: "/home/alice/qim/.qim/dev/pki/admin.key" },
  syncUrl: "https://127.0.0.1:40215",
  service: { cert: "/home/alice/qim/.qim/dev/pki/service.crt", key: "/home/alice/qim/.qim/dev/pki/service.key" },
  gatewayUrl: "wss://localhost:40217",
  context: "/home/alice/qim/.qim/dev/context.json",
  namedContext: { config: "/home/alice/.config/qimctl/config.json", name: "dev", written: true, current: "dev", note: null },
  status: "started",
  notes: ["created dev CA, server and admin certificates in .qim/dev/pki"],
};

const status: ResultOf<typeof DevStatus> = {
  dataDir: "/home/alice/qim/.qim/dev",
  state: "up",
  endpoint: "localhost:45307",
  tenant: "1d63fa11-ec98-45d9-8df7-44f9956204a9",
  authority: "redis-hash (development fallback, not an authority guarantee; keys qim:{uNNN}:ucs:*)",
  startedAt: "2026-11-30T00:08:42.697Z",
  redis: { pid: 9462, port: 32971, alive: true, answering: true },
  redisAccess: up.redisAccess,
  server: { pid: 9467, port: 45307, alive: true, answering: true },
  nodes: [
    { nodeId: "dev-1", pid: 9467, port: 45307, alive: true, answering: true, syncUrl: "https://127.0.0.1:40215", gatewayUrl: "wss://localhost:40217", units: ["relay", "partition", "slot"] },
    { nodeId: "dev-2", pid: 9471, port: 45311, alive: true, answering: true, syncUrl: "https://127.0.0.1:40219", gatewayUrl: "wss://localhost:40221", units: ["relay", "partition", "slot"] },
  ],
  syncUrl: "https://127.0.0.1:40215",
  gatewayUrl: "wss://localhost:40217",
  context: "/home/alice/qim/.qim/dev/context.json",
  strays: [],
};

export const samples = {
  "dev up": samplesOf<ResultOf<typeof DevUp>>(up, {
    ...up,
    namedContext: { config: "/home/alice/.config/qimctl/config.json", name: "dev", written: false, current: null, note: "the context \"dev\" exists and was not written by qimctl dev up: left as it is" },
    redis: { ...up.redis, addr: "rediss://127.0.0.1:32971" },
    redisAccess: secureAccess,
    status: "reused",
    notes: [],
  }),
  "dev status": samplesOf<ResultOf<typeof DevStatus>>(
    status,
    { ...status, redisAccess: secureAccess },
    // a stack started before every node served the HTTP API: dev-2 has none
    { ...status, nodes: [status.nodes[0]!, { ...status.nodes[1]!, syncUrl: null, gatewayUrl: null }] },
    { dataDir: "/home/alice/qim/.qim/dev", state: "partial", endpoint: null, tenant: null, authority: null, startedAt: null, redis: null, redisAccess: null, server: null, nodes: [], syncUrl: null, gatewayUrl: null, context: null, strays: [9470] },
  ),
  "dev restart": samplesOf<ResultOf<typeof DevRestart>>(
    { dataDir: "/home/alice/qim/.qim/dev", restarted: [{ nodeId: "dev-2", previousPid: 9471, stopped: "SIGTERM", pid: 9530, port: 45311 }] },
    {
      dataDir: "/home/alice/qim/.qim/dev",
      restarted: [
        { nodeId: "dev-1", previousPid: 9467, stopped: "already gone", pid: 9541, port: 45307 },
        { nodeId: "dev-2", previousPid: 9471, stopped: "SIGKILL", pid: 9552, port: 45311 },
      ],
    },
  ),
  "dev down": samplesOf<ResultOf<typeof DevDown>>(
    {
      dataDir: "/home/alice/qim/.qim/dev",
      wasRunning: true,
      stopped: [{ process: "server", pid: 9467, how: "SIGTERM" }, { process: "redis", pid: 9462, how: "SIGTERM" }],
      stateRemoved: true,
      contextsRemoved: ["dev"],
      purged: true,
      dryRun: false,
      removed: ["/home/alice/qim/.qim/dev/redis", "/home/alice/qim/.qim/dev/pki", "/home/alice/qim/.qim/dev/redis.log", "/home/alice/qim/.qim/dev/server.log", "/home/alice/qim/.qim/dev/audit.log", "/home/alice/qim/.qim/dev/context.json", "/home/alice/qim/.qim/dev/qim-drill-5b2f0c3e-9d1a-4c6e-8f7b-2a4d6c8e0f13.json", "/home/alice/qim/.qim/dev"],
    },
    { dataDir: "/home/alice/qim/.qim/dev", wasRunning: false, stopped: [], stateRemoved: false, contextsRemoved: [], purged: false, dryRun: false, removed: [] },
    {
      dataDir: "/home/alice/qim/.qim/dev",
      wasRunning: true,
      stopped: [{ process: "server", pid: 9467, how: "would stop" }, { process: "redis", pid: 9462, how: "would stop" }],
      stateRemoved: true,
      contextsRemoved: ["dev"],
      purged: false,
      dryRun: true,
      removed: ["/home/alice/qim/.qim/dev/redis", "/home/alice/qim/.qim/dev/pki", "/home/alice/qim/.qim/dev/context.json", "/home/alice/qim/.qim/dev/dev.json"],
    },
  ),
};
