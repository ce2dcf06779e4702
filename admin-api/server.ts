import { randomUUID } from "node:crypto";
import { existsSync, readdirSync } from "node:fs";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { dirname, join } from "node:path";
import type { TLSSocket } from "node:tls";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";
import { ReflectionService } from "@grpc/reflection";
import { HealthImplementation } from "grpc-health-check";
import {
  Engine,
  InvalidArgumentError,
  OutboxRelay,
  parseHostPort,
  QimError,
  RedisStore,
  RedisStreamsDispatchLog,
  registry,
  type EngineOptions,
  type TopologyConfig,
} from "../core/index.js";
import { AuditLog, type AuditRecord } from "./audit.js";
import { allowed, MUTATING, principalOf, type Principal } from "./auth.js";
import { describeChange, groupOut, historyOut, memberOut, membershipOut, sendOut, summaryOut } from "./convert.js";
import { mapError, toServiceError, type MappedError } from "./errors.js";
import { AuditServiceService, type AuditServiceServer } from "./gen/qim/admin/v1/audit.js";
import { GroupServiceService, type GroupServiceServer } from "./gen/qim/admin/v1/groups.js";
import { MessageServiceService, type MessageServiceServer } from "./gen/qim/admin/v1/messages.js";

export interface TlsFiles {
  caPem: string | Buffer;
  certPem: string | Buffer;
  keyPem: string | Buffer;
}

export interface AdminServerOptions {
  topology: TopologyConfig;
  /** host:port to serve gRPC on; port 0 picks a free one. */
  listen: string;
  /** Required unless insecureDev. */
  tls?: TlsFiles;
  /** Plaintext, every caller an admin. Development only; the server says so loudly. */
  insecureDev?: boolean;
  /** host:port for plain-HTTP /metrics; null turns it off. */
  metricsListen?: string | null;
  auditPath: string;
  /** fdatasync the audit log before answering (default true). */
  auditSync?: boolean;
  engine?: EngineOptions;
  dispatch?: { clusterId: string; topicId: string; partitionCount: number };
  /**
   * The in-process outbox relay: commits of this server are relayed at once (kicked); a sweep of
   * every bucket every N ms picks up the rest (other processes, recovery). 0 turns it off.
   */
  relayIntervalMs?: number;
  log?: (line: string) => void;
}

export interface AdminServer {
  /** The gRPC port actually bound. */
  port: number;
  metricsPort: number | null;
  engine: Engine;
  audit: AuditLog;
  close(): Promise<void>;
}

const STATUS_NAME = Object.fromEntries(Object.entries(grpc.status).filter(([, v]) => typeof v === "number").map(([k, v]) => [v, k])) as Record<number, string>;

function jsonArgs(request: unknown): unknown {
  return JSON.parse(JSON.stringify(request, (_k, v: unknown) => {
    if (typeof v === "bigint") return v.toString();
    if (v && typeof v === "object" && (v as { type?: string }).type === "Buffer") return `<${((v as { data: unknown[] }).data).length} bytes>`;
    return v;
  }));
}

/** host:port of a listening socket; port 0 asks the OS for a free one. */
function listenAddr(addr: string, field: string): { host: string; port: number } {
  const hp = parseHostPort(addr, { allowPortZero: true });
  if (!hp) throw new InvalidArgumentError(field, `${field} must be host:port, got "${addr}"`);
  return hp;
}

function findProtoDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    if (existsSync(join(dir, "proto", "qim", "admin", "v1"))) return join(dir, "proto");
    dir = dirname(dir);
  }
  throw new Error("proto/ folder not found");
}

/**
 * A grpc-js server that also audits TLS handshakes it refuses (no client certificate, another CA,
 * out of validity): those never reach a handler. grpc-js builds its HTTP/2 server in
 * createHttp2Server, which is not part of its typed surface, so the hook is checked at start.
 */
type Http2Factory = (credentials: grpc.ServerCredentials) => import("node:http2").Http2SecureServer;
const baseCreateHttp2Server = (grpc.Server.prototype as unknown as { createHttp2Server?: Http2Factory }).createHttp2Server;

class AuditingServer extends grpc.Server {
  onTlsRefusal: ((err: Error, socket: TLSSocket) => void) | undefined;
  /**
   * The verified peer certificate of each live TLS connection, keyed by remote address:port (the
   * form grpc-js's call.getPeer() gives): grpc-js re-reads and re-parses it on every call through
   * getAuthContext(), 6 % of the server's CPU in bench/admin. An entry is dropped when its own
   * socket closes; a miss falls back to getAuthContext().
   */
  readonly peers = new Map<string, { socket: TLSSocket; cert: import("node:tls").PeerCertificate }>();
}
if (typeof baseCreateHttp2Server === "function") {
  (AuditingServer.prototype as unknown as { createHttp2Server: Http2Factory }).createHttp2Server = function (this: AuditingServer, credentials) {
    const http2Server = baseCreateHttp2Server.call(this, credentials);
    if (credentials._isSecure()) {
      http2Server.on("tlsClientError", (err: Error, socket: TLSSocket) => this.onTlsRefusal?.(err, socket));
      http2Server.on("secureConnection", (socket: TLSSocket) => {
        const key = `${socket.remoteAddress}:${socket.remotePort}`;
        const cert = socket.getPeerCertificate();
        if (!socket.authorized || !cert || !cert.subject) return;
        this.peers.set(key, { socket, cert });
        socket.once("close", () => { if (this.peers.get(key)?.socket === socket) this.peers.delete(key); });
      });
    }
    return http2Server;
  };
}

export async function startAdminServer(opts: AdminServerOptions): Promise<AdminServer> {
  const log = opts.log ?? ((line: string) => process.stderr.write(line + "\n"));
  if (!opts.insecureDev && !opts.tls) throw new InvalidArgumentError("tls", "TLS material is required (CA, server certificate and key) unless --insecure-dev");
  const insecure = opts.insecureDev === true;
  if (insecure) {
    log("WARNING: --insecure-dev: plaintext gRPC, no client certificates, every caller is an admin. Never use this outside a development machine.");
  }

  // one line per distinct connection error every 10 s: a Redis outage is visible, not a flood
  const lastError = new Map<string, number>();
  const store = new RedisStore(opts.topology, {
    commandTimeoutMs: 5000,
    connectTimeoutMs: 3000,
    onError: (err) => {
      const now = Date.now();
      if ((lastError.get(err.message) ?? 0) + 10_000 > now) return;
      lastError.set(err.message, now);
      log(`redis: ${err.message}`);
    },
  });
  let relay: OutboxRelay | undefined;
  const engine = new Engine(store, { ...opts.engine, onCommit: (bucket) => relay?.kick(bucket) });
  const dispatch = new RedisStreamsDispatchLog(store, engine.keys, opts.dispatch ?? { clusterId: "qim", topicId: "dispatch", partitionCount: 8 });
  const audit = await AuditLog.open(opts.auditPath, { sync: opts.auditSync ?? true });
  relay = new OutboxRelay(store, engine.keys, dispatch, { onError: (err) => log(`relay: ${(err as Error).message}`) });

  const writeAudit = async (rec: Omit<AuditRecord, "time">) => audit.append({ time: new Date().toISOString(), ...rec });

  /**
   * Every RPC goes through here: authenticate, authorise, run the handler, audit (mutations and
   * refusals) before answering, map errors in one place.
   */
  function unary<Req, Res>(rpc: string, handler: (req: Req, p: Principal) => Promise<{ response: Res; detail?: string }>): grpc.handleUnaryCall<Req, Res> {
    return (call, callback) => {
      const requestId = randomUUID();
      const started = process.hrtime.bigint();
      const elapsed = () => Number(process.hrtime.bigint() - started) / 1e6;
      const principal = principalOf(call, insecure, server.peers.get(call.getPeer())?.cert);
      const record = (result: string, detail: string) => writeAudit({
        principal: principal?.name ?? "", role: principal?.role ?? "", rpc, arguments: jsonArgs(call.request),
        result, detail, durationMs: elapsed(), requestId, fingerprint: principal?.fingerprint ?? "",
      });
      const fail = (m: MappedError) => callback(toServiceError(m, requestId) as grpc.ServiceError);
      (async () => {
        if (!principal || !allowed(rpc, principal)) {
          const why = !principal ? "no client certificate subject"
            : principal.role === null ? `certificate of ${principal.name} names no known role (OU)`
              : `role ${principal.role} may not call ${rpc}`;
          const m: MappedError = { code: grpc.status.PERMISSION_DENIED, domainCode: "PERMISSION_DENIED", message: `permission denied: ${why}` };
          await record("PERMISSION_DENIED", why);
          fail(m);
          return;
        }
        try {
          const { response, detail } = await handler(call.request, principal);
          if (MUTATING.has(rpc)) await record("OK", detail ?? "");
          callback(null, response);
        } catch (err) {
          const m = mapError(err, requestId);
          if (m.code === grpc.status.INTERNAL || m.code === grpc.status.UNAVAILABLE) {
            log(`request ${requestId} ${rpc} failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
          }
          if (MUTATING.has(rpc)) await record(STATUS_NAME[m.code] ?? String(m.code), m.message);
          fail(m);
        }
      })().catch((err: unknown) => {
        // the audit log could not be written: the answer must not pretend otherwise
        log(`request ${requestId} ${rpc}: audit log write failed: ${err instanceof Error ? err.message : String(err)}`);
        fail({ code: grpc.status.INTERNAL, domainCode: "INTERNAL", message: `audit log unavailable (request ${requestId})` });
      });
    };
  }

  const groups: GroupServiceServer = {
    createGroup: unary("/qim.admin.v1.GroupService/CreateGroup", async (req) => {
      const g = await engine.createGroup({ tenant: req.tenant, owner: req.owner, members: req.members, ...(req.group ? { group: req.group } : {}) });
      return { response: groupOut(g), detail: `created group ${g.group} with ${g.memberCount} members` };
    }),
    getGroup: unary("/qim.admin.v1.GroupService/GetGroup", async (req) => ({ response: groupOut(await engine.getGroup(req.tenant, req.group)) })),
    addMembers: unary("/qim.admin.v1.GroupService/AddMembers", async (req) => {
      const r = await engine.addMembers({ tenant: req.tenant, group: req.group, users: req.users, dryRun: req.dryRun, ...(req.expectVersion !== undefined ? { expectVersion: Number(req.expectVersion) } : {}) });
      return { response: membershipOut(r), detail: describeChange(r) };
    }),
    removeMembers: unary("/qim.admin.v1.GroupService/RemoveMembers", async (req) => {
      const r = await engine.removeMembers({ tenant: req.tenant, group: req.group, users: req.users, dryRun: req.dryRun, ...(req.expectVersion !== undefined ? { expectVersion: Number(req.expectVersion) } : {}) });
      return { response: membershipOut(r), detail: describeChange(r) };
    }),
    listMembers: unary("/qim.admin.v1.GroupService/ListMembers", async (req) => {
      const r = await engine.listMembers({ tenant: req.tenant, group: req.group });
      return { response: { version: BigInt(r.version), members: r.members.map(memberOut) } };
    }),
  };

  const messages: MessageServiceServer = {
    sendMessage: unary("/qim.admin.v1.MessageService/SendMessage", async (req) => {
      const r = await engine.send({ tenant: req.tenant, group: req.group, sender: req.sender, text: req.text, ...(req.clientMessageId ? { clientMessageId: req.clientMessageId } : {}) });
      return { response: sendOut(r), detail: `${r.duplicate ? "duplicate of" : "committed"} seq ${r.conversationSeq}` };
    }),
    readHistory: unary("/qim.admin.v1.MessageService/ReadHistory", async (req) => {
      const page = await engine.history({ tenant: req.tenant, group: req.group, user: req.user, after: Number(req.after), ...(req.limit ? { limit: req.limit } : {}) });
      return { response: historyOut(page) };
    }),
    listConversationSummaries: unary("/qim.admin.v1.MessageService/ListConversationSummaries", async (req) => {
      if (req.groups.length === 0) {
        throw new QimError("UNIMPLEMENTED", "listing every conversation of a user needs the session projection, which this server does not run yet; name the groups");
      }
      if (req.groups.length > 100) throw new InvalidArgumentError("groups", "at most 100 groups per call");
      const summaries = await Promise.all(req.groups.map((group) => engine.conversationSummary({ tenant: req.tenant, group, user: req.user })));
      return { response: { summaries: summaries.map(summaryOut) } };
    }),
  };

  const auditService: AuditServiceServer = {
    tailAudit: unary("/qim.admin.v1.AuditService/TailAudit", async (req) => {
      const limit = req.limit === 0 ? 50 : req.limit;
      if (limit > 1000) throw new InvalidArgumentError("limit", "limit is at most 1000");
      const entries = await audit.tail(limit);
      return {
        response: {
          entries: entries.map((e) => ({
            time: e.time, principal: e.principal, role: e.role, rpc: e.rpc, argumentsJson: JSON.stringify(e.arguments),
            result: e.result, detail: e.detail, durationMs: e.durationMs, requestId: e.requestId, fingerprint: e.fingerprint,
          })),
        },
      };
    }),
  };

  if (typeof baseCreateHttp2Server !== "function") log("WARNING: this @grpc/grpc-js has no createHttp2Server hook: refused TLS handshakes will not be audited");
  const server = new AuditingServer({ "grpc.max_receive_message_length": 4 * 1024 * 1024 });
  server.onTlsRefusal = (err, socket) => {
    let presented = "";
    let fingerprint = "";
    try {
      const cert = socket.getPeerCertificate();
      if (cert && cert.subject) {
        presented = `${cert.subject.CN ?? ""}/${cert.subject.OU ?? ""}`;
        fingerprint = cert.fingerprint256 ?? "";
      }
    } catch {
      // no certificate at all
    }
    const reason = (socket as TLSSocket & { authorizationError?: Error | string }).authorizationError;
    void writeAudit({
      principal: presented ? `unverified:${presented}` : "", role: "", rpc: "tls-handshake", arguments: { remote: socket.remoteAddress ?? "" },
      result: "UNAUTHENTICATED", detail: reason ? String(reason) : err.message, durationMs: 0, requestId: randomUUID(), fingerprint,
    }).catch((e: unknown) => log(`audit log write failed: ${String(e)}`));
  };
  server.addService(GroupServiceService, groups);
  server.addService(MessageServiceService, messages);
  server.addService(AuditServiceService, auditService);

  const servingStatus = { "": "SERVING", "qim.admin.v1.GroupService": "SERVING", "qim.admin.v1.MessageService": "SERVING", "qim.admin.v1.AuditService": "SERVING" } as const;
  const health = new HealthImplementation({ ...servingStatus });
  health.addToServer(server);
  const protoDir = findProtoDir();
  const protoFiles = readdirSync(join(protoDir, "qim", "admin", "v1")).filter((f) => f.endsWith(".proto")).map((f) => `qim/admin/v1/${f}`);
  new ReflectionService(loadSync(protoFiles, { includeDirs: [protoDir] })).addToServer(server);

  const credentials = insecure
    ? grpc.ServerCredentials.createInsecure()
    : grpc.ServerCredentials.createSsl(Buffer.from(opts.tls!.caPem), [{ cert_chain: Buffer.from(opts.tls!.certPem), private_key: Buffer.from(opts.tls!.keyPem) }], true);
  const { host, port } = listenAddr(opts.listen, "listen");
  const boundPort = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${host.includes(":") ? `[${host}]` : host}:${port}`, credentials, (err, p) => (err ? reject(err) : resolve(p))));

  // the store's reachability drives the health status, so that probes see a server that cannot work
  let healthTimer: NodeJS.Timeout | undefined;
  const probe = async () => {
    const ok = await Promise.all(store.clients().map((c) => c.ping().then(() => true, () => false))).then((r) => r.every(Boolean));
    for (const svc of Object.keys(servingStatus)) health.setStatus(svc, ok ? "SERVING" : "NOT_SERVING");
    healthTimer = setTimeout(() => void probe(), 2000);
    healthTimer.unref();
  };
  void probe();

  let metricsServer: HttpServer | undefined;
  let metricsPort: number | null = null;
  const m = opts.metricsListen ? listenAddr(opts.metricsListen, "metricsListen") : null;
  if (m) {
    metricsServer = createHttpServer((req, res) => {
      if (req.url !== "/metrics") { res.writeHead(404).end("not found\n"); return; }
      registry.metrics().then(
        (text) => res.writeHead(200, { "content-type": registry.contentType }).end(text),
        (err: unknown) => res.writeHead(500).end(String(err)),
      );
    });
    metricsPort = await new Promise<number>((resolve, reject) => {
      metricsServer!.once("error", reject);
      metricsServer!.listen(m.port, m.host, () => resolve((metricsServer!.address() as { port: number }).port));
    });
  }

  // the relay appends only to a dispatch log whose identity matches ours (fail closed)
  let relayOk = true;
  try {
    await dispatch.ensureIdentity();
  } catch (err) {
    relayOk = false;
    log(`dispatch log: ${(err as Error).message}; the outbox relay is NOT running, commits stay RECORDED`);
  }
  if (relayOk && (opts.relayIntervalMs ?? 1000) > 0) relay.start(opts.relayIntervalMs ?? 1000);

  log(`qim admin server listening on ${host}:${boundPort} (${insecure ? "INSECURE plaintext" : "mTLS, client certificates required"})${metricsPort !== null ? `, metrics on http://${m!.host}:${metricsPort}/metrics` : ""}`);

  return {
    port: boundPort,
    metricsPort,
    engine,
    audit,
    async close() {
      if (healthTimer) clearTimeout(healthTimer);
      await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
      await relay.stop();
      if (metricsServer) await new Promise<void>((resolve) => metricsServer!.close(() => resolve()));
      await audit.close();
      await store.close();
    },
  };
}
