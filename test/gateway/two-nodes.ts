/**
 * Two REAL node processes sharing one Redis, each with its client gateway and node RPC listener,
 * both taking every kind of unit (cluster lease 3 s, heartbeat 1 s): what the rooms and presence
 * tests run their devices on. Also a raw Redis client, a token key set, an operator context for the
 * tenant and an admin client on the first node. `startNode` restarts a node (after a SIGKILL) on
 * its port.
 */
import { randomUUID } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Redis } from "ioredis";
import { connectAdmin, type AdminClient } from "../../admin-api/client.js";
import { writeTestPki, type TestPkiFiles } from "../certs/fixture.js";
import { ok, run } from "../e2e/qimctl.js";
import { startRedis, type RedisServer } from "../harness/redis.js";
import { startServerProcess, type ServerProcess } from "../reliability/server-process.js";

export interface NodeSlot {
  id: string;
  proc?: ServerProcess;
  /** wss://localhost:PORT/… as the node logged it. */
  url?: string;
  port?: number;
}

export interface TwoNodes {
  dir: string;
  pki: TestPkiFiles;
  redis: RedisServer;
  raw: Redis;
  nodes: NodeSlot[];
  /** The operator context file (`run(…, { context })`). */
  context: string;
  tenant: string;
  ca: Buffer;
  admin: AdminClient;
  /** Starts (or restarts, on the same port) one of the two nodes. */
  startNode(n: NodeSlot): Promise<void>;
  stop(): Promise<void>;
}

/** `extraArgs`: more flags for both nodes (e.g. a gateway rate a test's load needs). */
export async function startTwoNodes(prefix: string, extraArgs: string[] = []): Promise<TwoNodes> {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  const pki = await writeTestPki(path.join(dir, "pki"));
  const redis = await startRedis();
  const raw = new Redis({ host: "127.0.0.1", port: redis.port, lazyConnect: true });
  await raw.connect();
  const keysFile = path.join(dir, "token-keys.json");
  const context = path.join(dir, "context.json");
  ok(await run(["token", "keygen", "--keys", keysFile]), "token keygen");
  const nodes: NodeSlot[] = [{ id: "node-a" }, { id: "node-b" }];
  const startNode = async (n: NodeSlot) => {
    n.proc = await startServerProcess({
      redisAddr: redis.addr, pki, auditLog: path.join(dir, `${n.id}.audit.log`), metricsListen: "127.0.0.1:0", ...(n.port ? { port: n.port } : {}),
      extraArgs: [
        "--node-id", n.id, "--data-dir", path.join(dir, n.id),
        "--cluster-lease-ttl", "3s", "--cluster-heartbeat-interval", "1s",
        "--node-listen", "127.0.0.1:0", "--node-tls-cert", pki.nodeA.certPath, "--node-tls-key", pki.nodeA.keyPath,
        "--gateway-listen", "127.0.0.1:0", "--tokens-keys", keysFile, ...extraArgs,
      ],
    });
    n.port = n.proc.port;
    n.url = /client gateway on (wss:\/\/\S+)/.exec(await n.proc.waitForLog(/client gateway on /))![1]!.replace("127.0.0.1", "localhost");
  };
  for (const n of nodes) await startNode(n);
  const tenant = randomUUID();
  writeFileSync(context, JSON.stringify({ endpoint: nodes[0]!.proc!.endpoint, ca: pki.ca.certPath, cert: pki.operator.certPath, key: pki.operator.keyPath, tenant }));
  const admin = connectAdmin({
    endpoint: nodes[0]!.proc!.endpoint, caPem: readFileSync(pki.ca.certPath, "utf8"), certPem: readFileSync(pki.admin.certPath, "utf8"),
    keyPem: readFileSync(pki.admin.keyPath, "utf8"), deadlineMs: 8000,
  });
  return {
    dir, pki, redis, raw, nodes, context, tenant, ca: readFileSync(pki.ca.certPath), admin, startNode,
    async stop() {
      admin.close();
      for (const n of nodes) await n.proc?.stop();
      await raw.quit();
      await redis.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
