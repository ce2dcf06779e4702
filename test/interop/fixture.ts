/**
 * What the interop tests share: a real admin server over mTLS on its own redis-server (as the
 * admin-api tests start them), the PEM files that third-party clients read, a group whose members
 * the test itself chose, and where prerequisites put the clients (scripts/prerequisites.mjs).
 */
import { randomUUID } from "node:crypto";
import { execFile } from "node:child_process";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { connectAdmin } from "../../admin-api/client.js";
import { startAdminServer, type AdminServer } from "../../server/node.js";
import { issueClientCert } from "../../certs/pki.js";
import { testPki, writeTestPki, type TestPkiFiles } from "../certs/fixture.js";
import { ROOT } from "../e2e/qimctl.js";
import { startRedis, type RedisServer } from "../harness/redis.js";

/** A client process that does not answer within this is a failed test, not a hung run. */
export const CLIENT_TIMEOUT_MS = 60_000;
/** More than any client here prints (a describe of every service is a few KiB). */
const CLIENT_OUTPUT_MAX_BYTES = 16 * 1024 * 1024;
/** More audit entries than these tests ever cause. */
const AUDIT_TAIL_MAX = 1000;
/** The per-call deadline of the set-up calls made through our own client. */
const SETUP_DEADLINE_MS = 5_000;

/** The qim.admin.v1 services, read from the .proto sources (not from the server under test). */
export async function adminServicesInSources(): Promise<string[]> {
  const dir = path.join(ROOT, "proto", "qim", "admin", "v1");
  const services: string[] = [];
  for (const f of (await readdir(dir)).filter((n) => n.endsWith(".proto")).sort()) {
    const text = await readFile(path.join(dir, f), "utf8");
    const pkg = /^package\s+([\w.]+)\s*;/m.exec(text)?.[1];
    if (!pkg) throw new Error(`${f} declares no package`);
    for (const m of text.matchAll(/^service\s+(\w+)\s*\{/gm)) services.push(`${pkg}.${m[1]}`);
  }
  return services;
}

/** The services of the gRPC standards the server must list besides its own (issue 10). */
export const STANDARD_SERVICES = ["grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"];

/** A member in canonical proto3 JSON (camelCase names, 64-bit integers as strings, zeros and absent optionals left out). */
export interface MemberJson {
  userId: string;
  joinedAt?: string;
  leftAt?: string;
  state: string;
}

export interface InteropStack {
  /** "localhost:PORT": the server certificate names localhost. */
  target: string;
  /** PEM files of the CA and of a viewer's client certificate and key. */
  files: { ca: string; cert: string; key: string };
  tenant: string;
  group: string;
  /** ListMembers of `group` as the spec says it must read after the set-up below. */
  expected: { version: string; members: MemberJson[] };
  /** How many TLS handshakes the server has refused so far, by its audit log (refusals are audited as they happen). */
  refusedHandshakes(): Promise<number>;
  close(): Promise<void>;
}

/**
 * Starts redis-server and the admin server, and sets up a group through the server as the
 * operator and drill roles would: owner O with members A and B (joined_at 0), one message
 * (conversation_seq 1), C added (the join event is seq 2: joined_at = 2 − 1), B removed (event
 * seq 3: left_at = 3) — ADR-0021 §2–3, DESIGN §2.
 */
export async function startInteropStack(): Promise<InteropStack> {
  const pki = await testPki();
  const redis: RedisServer = await startRedis();
  const dir = await mkdtemp(path.join(tmpdir(), "qim-interop-"));
  let server: AdminServer | undefined;
  try {
    const written = await writeTestPki(dir);
    const files = { ca: written.ca.certPath, cert: written.viewer.certPath, key: written.viewer.keyPath };
    server = await startAdminServer({
      topology: { kind: "instances", addrs: [redis.addr] },
      listen: "127.0.0.1:0",
      metricsListen: null,
      auditPath: path.join(dir, "audit.log"),
      tls: { caPem: pki.ca.certPem, certPem: pki.server.certPem, keyPem: pki.server.keyPem },
      log: () => {},
    });
    const target = `localhost:${server.port}`;
    const tenant = randomUUID();
    const [owner, a, b, c] = [randomUUID(), randomUUID(), randomUUID(), randomUUID()];
    const as = (who: "operator" | "drill") => connectAdmin({ endpoint: target, caPem: pki.ca.certPem, certPem: pki[who].certPem, keyPem: pki[who].keyPem, deadlineMs: SETUP_DEADLINE_MS });
    const op = as("operator");
    const drill = as("drill");
    let group: string;
    try {
      group = (await op.createGroup({ tenant, group: "", owner, members: [a, b] })).group;
      await drill.sendMessage({ tenant, group, sender: a, text: "hello", clientMessageId: "", mentions: [] });
      await op.addMembers({ tenant, group, users: [c], dryRun: false });
      await op.removeMembers({ tenant, group, users: [b], dryRun: false });
    } finally {
      op.close();
      drill.close();
    }
    const running = server;
    return {
      target,
      files,
      tenant,
      group,
      expected: {
        version: "3",
        members: [
          { userId: owner, state: "ACTIVE" },
          { userId: a, state: "ACTIVE" },
          { userId: b, leftAt: "3", state: "REMOVED" },
          { userId: c, joinedAt: "1", state: "ACTIVE" },
        ],
      },
      refusedHandshakes: async () => (await running.audit.tail(AUDIT_TAIL_MAX)).filter((e) => e.rpc === "tls-handshake").length,
      async close() {
        await running.close();
        await redis.stop();
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await server?.close();
    await redis.stop();
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
}

/** Members in a stable order, for comparing one list with another. */
export function byUser(members: MemberJson[]): MemberJson[] {
  return [...members].sort((x, y) => x.userId.localeCompare(y.userId));
}

/** scripts/prerequisites.mjs: the one place that knows where the third-party clients are. */
export async function prerequisites(): Promise<{ findGrpcurl(): string | undefined; DEBIAN_PYTHON: string }> {
  return (await import(pathToFileURL(path.join(ROOT, "scripts", "prerequisites.mjs")).href)) as { findGrpcurl(): string | undefined; DEBIAN_PYTHON: string };
}

export interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a client to its end (never through a shell) and reports its exit code and output. */
export function runClient(command: string, args: string[]): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(command, args, { timeout: CLIENT_TIMEOUT_MS, maxBuffer: CLIENT_OUTPUT_MAX_BYTES }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === "number" ? err.code : -1) : 0;
      resolve({ code, stdout, stderr: err && code === -1 ? `${stderr}${err.message}` : stderr });
    });
  });
}

/** An admin server over mTLS with the CMD sync HTTP API for `tenant`, its own redis-server, and an application server's certificate (OU service). */
export interface CmdHttpStack {
  redis: RedisServer;
  server: AdminServer;
  dir: string;
  files: TestPkiFiles;
  caPem: string;
  /** The application server's certificate and key, as files and as PEM. */
  service: { cert: string; key: string; certPem: string; keyPem: string };
  close(): Promise<void>;
}

export async function startCmdHttpStack(tenant: string, dirPrefix: string): Promise<CmdHttpStack> {
  const pki = await testPki();
  const dir = await mkdtemp(path.join(tmpdir(), dirPrefix));
  const files = await writeTestPki(dir);
  const svc = issueClientCert(pki.ca, { name: "app-1", role: "service" });
  const service = { cert: path.join(dir, "service.crt"), key: path.join(dir, "service.key"), certPem: svc.certPem, keyPem: svc.keyPem };
  await writeFile(service.cert, svc.certPem);
  await writeFile(service.key, svc.keyPem, { mode: 0o600 });
  const redis = await startRedis();
  const server = await startAdminServer({
    topology: { kind: "instances", addrs: [redis.addr] },
    listen: "127.0.0.1:0",
    metricsListen: null,
    auditPath: path.join(dir, "audit.log"),
    tls: { caPem: pki.ca.certPem, certPem: pki.server.certPem, keyPem: pki.server.keyPem },
    sync: { listen: "127.0.0.1:0", tenant },
    log: () => {},
  });
  return {
    redis, server, dir, files, caPem: pki.ca.certPem, service,
    async close() {
      await server.close();
      await redis.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
