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
  authorityFromEnv,
  CassandraAuthority,
  DEFAULT_RETENTION_MS,
  Engine,
  InvalidArgumentError,
  OutboxRelay,
  parseHostPort,
  ProjectionRefusedError,
  refusedVerdict,
  ProjectionStack,
  RedisStore,
  RedisStreamsDispatchLog,
  registry,
  type CassandraAuthorityOptions,
  type ConversationStateAuthority,
  type DrillWipe,
  type EngineOptions,
  type TopologyConfig,
} from "../core/index.js";
import { failpoint, failpointsArmed, FAILPOINTS } from "../core/failpoints.js";
import { parseReason } from "../core/text.js";
import { auditArguments, AuditLog, type AuditRecord } from "./audit.js";
import { allowed, MUTATING, principalOf, type CallWithAuth, type Principal } from "./auth.js";
import { DenyList } from "./deny-list.js";
import {
  describeChange, describeDrill, drillProgressOut, drillReportOut, epochBumpOut, groupOut, historyOut, memberOut, membershipOut, partitionOut,
  projectionStatusOut, sendOut, summaryOut,
} from "./convert.js";
import { mapError, toServiceError, type MappedError } from "./errors.js";
import { DIAGNOSTICS_ENV, Observer, startDiagnostics, WATCH_RPC, watchIntervalMs } from "./observe.js";
import { AuditServiceService, type AuditServiceServer } from "./gen/qim/admin/v1/audit.js";
import { DispatchServiceService, type DispatchServiceServer } from "./gen/qim/admin/v1/dispatch.js";
import { DrillServiceService, type DrillEvent, type DrillServiceServer, type RunRebuildDrillRequest } from "./gen/qim/admin/v1/drill.js";
import { GroupServiceService, type GroupServiceServer } from "./gen/qim/admin/v1/groups.js";
import { MessageServiceService, type ListConversationSummariesResponse, type MessageServiceServer } from "./gen/qim/admin/v1/messages.js";
import { ObserveServiceService, type ObserveServiceServer } from "./gen/qim/admin/v1/observe.js";
import { ProjectionServiceService, type ProjectionServiceServer } from "./gen/qim/admin/v1/projection.js";

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
  /**
   * The conversation-set authority the session projection is rebuilt from. Default: a
   * CassandraAuthority from `cassandra` when given, else authorityFromEnv (Cassandra when
   * QIM_CASSANDRA_CONTACT_POINTS is set, else the Redis-hash development fallback). An authority
   * passed in is stopped with the server but not closed: its owner closes it.
   */
  authority?: ConversationStateAuthority;
  /** Cassandra settings (the daemon's --cassandra-* flags); the server creates and closes that authority. */
  cassandra?: CassandraAuthorityOptions;
  /**
   * The deny list of revoked client certificates (admin-api/deny-list.ts): a file of SHA-256
   * fingerprints, polled every `denyListPollMs` (default 1000; 0: only on reloadDenyList(), which
   * the daemon calls on SIGHUP). A call from a listed certificate is refused PERMISSION_DENIED
   * "certificate revoked" and audited. A file that cannot be read or parsed at start-up is an error.
   */
  denyList?: string;
  denyListPollMs?: number;
  /** Dispatch-log retention in ms (default 1 day); 0 never trims. */
  retentionMs?: number;
  /** How often the projection consumer polls every partition when idle (default 250 ms; appends kick it sooner). */
  projectionPollMs?: number;
  /**
   * One line per notable event. A start-up refused by the session projection logs one line per
   * partition ("session projection: partition N VERDICT: detail") and a last line saying so.
   */
  log?: (line: string) => void;
}

export interface AdminServer {
  /** The gRPC port actually bound. */
  port: number;
  metricsPort: number | null;
  engine: Engine;
  audit: AuditLog;
  /** The session projection this server runs (consumer, registration task, drills). */
  projection: ProjectionStack;
  /** The dashboard's watchers (ObserveService.Watch); `active` counts the streams being served. */
  observer: Observer;
  /** Reads the deny list file again (SIGHUP); the previous list stays when it is malformed. No-op without one. */
  reloadDenyList(reason?: string): Promise<void>;
  close(): Promise<void>;
}

/** A request whose bytes are not the protobuf message of its RPC; guarded() refuses it. */
class UndecodableRequest {
  constructor(readonly message: string, readonly reason: string, readonly bytes: number) {}
}

/**
 * grpc-js answers a request its deserializer throws on (truncated, a wire type that does not
 * exist, garbage) with INTERNAL "Error deserializing request" before any handler runs: bad input
 * would read as a server fault and go unaudited. Here each method's deserializer hands such a
 * request on as an UndecodableRequest, which guarded() refuses as INVALID_ARGUMENT(request) after
 * authorising and auditing it like any other call.
 */
function refuseUndecodableInHandlers<S extends grpc.ServiceDefinition>(service: S, messageOf: (path: string) => string): S {
  const wrapped: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const [name, method] of Object.entries(service) as [string, grpc.MethodDefinition<unknown, unknown>][]) {
    wrapped[name] = {
      ...method,
      requestDeserialize: (bytes: Buffer) => {
        try {
          return method.requestDeserialize(bytes);
        } catch (err) {
          return new UndecodableRequest(messageOf(method.path), err instanceof Error ? err.message : String(err), bytes.length);
        }
      },
    };
  }
  return wrapped as S;
}

/**
 * Thrown by a call's `admit()` when its certificate was put on the deny list after the call began;
 * guarded() refuses and audits it as it refuses a revoked certificate up front.
 */
class RevokedDuringCall extends Error {}

/** A server call as far as guarded() needs it (unary and server-streaming alike). */
type GuardedCall = CallWithAuth & { request: unknown; getPeer(): string };

const STATUS_NAME = Object.fromEntries(Object.entries(grpc.status).filter(([, v]) => typeof v === "number").map(([k, v]) => [v, k])) as Record<number, string>;

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
  /** `remote` is the client's address, "" when unknown. */
  onTlsRefusal: ((err: Error, socket: TLSSocket, remote: string) => void) | undefined;
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
      // Node refuses a client certificate by destroying the TLS socket, and only then emits
      // tlsClientError: by that time the socket no longer knows its peer's address (nor its
      // certificate). The address is read from the raw TCP socket as it connects, before the TLS
      // socket wraps it (the TLS socket keeps it as _parent; without that, the address is "").
      const remotes = new WeakMap<object, string>();
      http2Server.prependListener("connection", (raw: import("node:net").Socket) => {
        if (raw.remoteAddress) remotes.set(raw, raw.remoteAddress);
      });
      http2Server.on("tlsClientError", (err: Error, socket: TLSSocket) => {
        const parent = (socket as TLSSocket & { _parent?: unknown })._parent;
        const remote = socket.remoteAddress ?? (parent && typeof parent === "object" ? remotes.get(parent) : undefined) ?? "";
        this.onTlsRefusal?.(err, socket, remote);
      });
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
  if (insecure && opts.denyList) throw new InvalidArgumentError("denyList", "a deny list needs mTLS: --insecure-dev has no client certificates to refuse");
  const armed = failpointsArmed();
  if (armed.length > 0) log(`WARNING: QIM_FAILPOINTS arms fail point(s) ${armed.join(", ")}: this process kills itself there (fault-injection tests only)`);

  // one line per distinct error every 10 s: a Redis (or Cassandra) outage is visible, not a flood
  const lastError = new Map<string, number>();
  const throttled = (line: string) => {
    const now = Date.now();
    if ((lastError.get(line) ?? 0) + 10_000 > now) return;
    lastError.set(line, now);
    log(line);
  };
  const store = new RedisStore(opts.topology, {
    commandTimeoutMs: 5000,
    connectTimeoutMs: 3000,
    onError: (err) => throttled(`redis: ${err.message}`),
  });

  // What start-up opened, closed in reverse order should a later step fail: a server that does not
  // start leaves no connection, timer or listener behind.
  const opened: { what: string; close: () => Promise<void> }[] = [{ what: "store", close: () => store.close() }];
  const undo = async () => {
    for (const o of opened.reverse()) await o.close().catch((err: unknown) => log(`start-up cleanup of the ${o.what} failed: ${String(err)}`));
  };

  let relay: OutboxRelay | undefined;
  let engine: Engine;
  let stack: ProjectionStack;
  let ownAuthority: boolean;
  let audit: AuditLog;
  let denyList: DenyList | undefined;
  try {
    if (opts.denyList) {
      denyList = await DenyList.open(opts.denyList, { log, ...(opts.denyListPollMs !== undefined ? { pollMs: opts.denyListPollMs } : {}) });
      const list = denyList;
      opened.push({ what: "deny list", close: () => list.close() });
    }
    engine = new Engine(store, { ...opts.engine, onCommit: (bucket) => relay?.kick(bucket) });
    const dispatch = new RedisStreamsDispatchLog(store, engine.keys, opts.dispatch ?? { clusterId: "qim", topicId: "dispatch", partitionCount: 8 });
    ownAuthority = opts.authority === undefined;
    const authority = opts.authority ?? (opts.cassandra ? new CassandraAuthority(opts.cassandra) : authorityFromEnv(store, engine.keys));
    log(`conversation-set authority: ${authority.describe()}`);
    stack = new ProjectionStack(engine, dispatch, authority, {
      retentionMs: opts.retentionMs ?? DEFAULT_RETENTION_MS,
      ...(opts.projectionPollMs !== undefined ? { projector: { pollIntervalMs: opts.projectionPollMs } } : {}),
      log,
      onError: (err) => throttled(`session projection: ${err instanceof Error ? err.message : String(err)}`),
    });
    const projection = stack;
    const authorityOwned = ownAuthority;
    opened.push({ what: "session projection", close: () => (authorityOwned ? projection.close() : projection.stop()) });
    relay = new OutboxRelay(store, engine.keys, dispatch, { onAppended: stack.lowLatency, onError: (err) => log(`relay: ${(err as Error).message}`) });

    // Fail closed: the projection's start-up audit records the log's identity on first use and
    // refuses a log that is not ours (naming every partition) or that lost acknowledged records
    // (BEYOND_HIGH); either way the server does not start, so the relay never appends to it.
    const report = await stack.start();
    if (report.epochBumped) log(`session projection: started at epoch ${report.epoch} after a loss (see above)`);
    audit = await AuditLog.open(opts.auditPath, { sync: opts.auditSync ?? true });
    const auditLog = audit;
    opened.push({ what: "audit log", close: () => auditLog.close() });
  } catch (err) {
    if (err instanceof ProjectionRefusedError) {
      const refused = err.audits.filter(refusedVerdict);
      log(`qim admin server NOT started: the session projection refuses ${refused.map((a) => `partition ${a.partition} (${a.verdict})`).join(", ")}; nothing was changed. See docs/operator-guide.md "Start-up refused".`);
    }
    await undo();
    throw err;
  }
  const projection = stack;
  const outboxRelay = relay;

  const writeAudit = async (rec: Omit<AuditRecord, "time">) => audit.append({ time: new Date().toISOString(), ...rec });

  /**
   * Every RPC goes through here: authenticate, authorise, run the body, audit (mutations and
   * refusals) before answering, map errors in one place. `body` returns what to audit and how to
   * answer; `fail` sends an error status.
   */
  function guarded(
    rpc: string, call: GuardedCall,
    body: (p: Principal, admit: () => void) => Promise<{ detail?: string | undefined; answer: () => void }>,
    fail: (e: Partial<grpc.ServiceError>) => void,
  ): void {
    const requestId = randomUUID();
    const started = process.hrtime.bigint();
    const elapsed = () => Number(process.hrtime.bigint() - started) / 1e6;
    const principal = principalOf(call, insecure, server.peers.get(call.getPeer())?.cert);
    const record = (result: string, detail: string) => writeAudit({
      principal: principal?.name ?? "", role: principal?.role ?? "", rpc, arguments: auditArguments(call.request),
      result, detail, durationMs: elapsed(), requestId, fingerprint: principal?.fingerprint ?? "",
    });
    const refuse = (m: MappedError) => fail(toServiceError(m, requestId));
    const refuseRevoked = async (p: Principal) => {
      await record("PERMISSION_DENIED", `certificate revoked: ${p.fingerprint} is on the deny list`);
      refuse({ code: grpc.status.PERMISSION_DENIED, domainCode: "PERMISSION_DENIED", message: `permission denied: certificate revoked (SHA-256 ${p.fingerprint} of ${p.name} is on the server's deny list)` });
    };
    (async () => {
      if (principal && denyList?.has(principal.fingerprint)) {
        // revoked: refused before the role is even looked at, whatever the RPC
        await refuseRevoked(principal);
        return;
      }
      if (!principal || !allowed(rpc, principal)) {
        const why = !principal ? "no client certificate subject"
          : principal.role === null ? `certificate of ${principal.name} names no known role (OU)`
            : `role ${principal.role} may not call ${rpc}`;
        const m: MappedError = { code: grpc.status.PERMISSION_DENIED, domainCode: "PERMISSION_DENIED", message: `permission denied: ${why}` };
        await record("PERMISSION_DENIED", why);
        refuse(m);
        return;
      }
      try {
        if (call.request instanceof UndecodableRequest) {
          throw new InvalidArgumentError("request", `the request is not a valid ${call.request.message} message: ${call.request.reason}`);
        }
        // a call that does not end by itself (Watch) asks again before each answer it streams
        const admit = () => {
          if (denyList?.has(principal.fingerprint)) throw new RevokedDuringCall();
        };
        const { detail, answer } = await body(principal, admit);
        if (MUTATING.has(rpc)) await record("OK", detail ?? "");
        answer();
      } catch (err) {
        if (err instanceof RevokedDuringCall) {
          await refuseRevoked(principal);
          return;
        }
        const m = mapError(err, requestId);
        // a bug gets its stack; an unreachable store one line (a dashboard retries every few seconds)
        if (m.code === grpc.status.INTERNAL) log(`request ${requestId} ${rpc} failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
        else if (m.code === grpc.status.UNAVAILABLE) log(`request ${requestId} ${rpc} failed: ${err instanceof Error ? err.message : String(err)}`);
        if (MUTATING.has(rpc)) await record(STATUS_NAME[m.code] ?? String(m.code), m.message);
        refuse(m);
      }
    })().catch((err: unknown) => {
      // the audit log could not be written: the answer must not pretend otherwise
      log(`request ${requestId} ${rpc}: audit log write failed: ${err instanceof Error ? err.message : String(err)}`);
      refuse({ code: grpc.status.INTERNAL, domainCode: "INTERNAL", message: `audit log unavailable (request ${requestId})` });
    });
  }

  function unary<Req, Res>(rpc: string, handler: (req: Req, p: Principal) => Promise<{ response: Res; detail?: string }>): grpc.handleUnaryCall<Req, Res> {
    return (call, callback) => guarded(rpc, call, async (p) => {
      const { response, detail } = await handler(call.request, p);
      return { detail, answer: () => callback(null, response) };
    }, (e) => callback(e as grpc.ServiceError));
  }

  /**
   * A server-streaming RPC: the handler sends events as it goes and returns the last one, which is
   * sent only after the audit entry is written (so that a client that has the final event knows it
   * is audited). A client that went away does not stop the handler: a drill runs to its end.
   */
  function serverStream<Req, Ev>(rpc: string, handler: (req: Req, p: Principal, send: (ev: Ev) => void) => Promise<{ last: Ev; detail?: string }>): grpc.handleServerStreamingCall<Req, Ev> {
    return (call) => {
      const send = (ev: Ev) => {
        if (!call.cancelled && call.writable) call.write(ev);
      };
      guarded(rpc, call, async (p) => {
        const { last, detail } = await handler(call.request, p, send);
        return { detail, answer: () => { send(last); call.end(); } };
      }, (e) => {
        if (!call.cancelled) call.emit("error", e);
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
      if (r.outcome === "committed") failpoint(FAILPOINTS.membershipAfterCommit);
      return { response: membershipOut(r), detail: describeChange(r) };
    }),
    removeMembers: unary("/qim.admin.v1.GroupService/RemoveMembers", async (req) => {
      const r = await engine.removeMembers({ tenant: req.tenant, group: req.group, users: req.users, dryRun: req.dryRun, ...(req.expectVersion !== undefined ? { expectVersion: Number(req.expectVersion) } : {}) });
      if (r.outcome === "committed") failpoint(FAILPOINTS.membershipAfterCommit);
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
        // the user's conversations from the session projection (rebuilt first when their mark is behind)
        const list = await projection.sessions.listSessions({ tenant: req.tenant, user: req.user, limit: req.limit === 0 ? 50 : req.limit });
        const response: ListConversationSummariesResponse = {
          summaries: list.sessions.map(summaryOut), epoch: BigInt(list.epoch), rebuilt: list.rebuilt, total: list.total, hidden: list.hidden,
        };
        return { response };
      }
      if (req.groups.length > 100) throw new InvalidArgumentError("groups", "at most 100 groups per call");
      const summaries = await Promise.all(req.groups.map((group) => engine.conversationSummary({ tenant: req.tenant, group, user: req.user })));
      const response: ListConversationSummariesResponse = { summaries: summaries.map(summaryOut) };
      return { response };
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

  const projectionService: ProjectionServiceServer = {
    getEpoch: unary("/qim.admin.v1.ProjectionService/GetEpoch", async (req) => {
      const limit = req.limit === 0 ? 10 : req.limit;
      if (limit > 100) throw new InvalidArgumentError("limit", "limit is at most 100");
      const [epoch, bumps] = await Promise.all([projection.epoch.get(), projection.epoch.history(limit)]);
      return { response: { epoch: BigInt(epoch), bumps: bumps.map(epochBumpOut) } };
    }),
    bumpEpoch: unary("/qim.admin.v1.ProjectionService/BumpEpoch", async (req, p) => {
      const reason = parseReason(req.reason, "reason", { required: true });
      const b = await projection.epoch.bump(reason, p.name);
      return { response: epochBumpOut(b), detail: `epoch bumped to ${b.epoch}: ${reason}` };
    }),
    rebuildUser: unary("/qim.admin.v1.ProjectionService/RebuildUser", async (req) => {
      const r = await projection.sessions.rebuildUser(req.tenant, req.user, { force: req.force });
      return {
        response: { epoch: BigInt(r.epoch), rebuilt: r.rebuilt, merged: r.merged, mark: BigInt(r.mark) },
        detail: r.rebuilt ? `rebuilt user ${req.user}: merged ${r.merged} conversation(s) from the authority at epoch ${r.epoch}`
          : `nothing to do: user ${req.user}'s mark ${r.mark} is current (epoch ${r.epoch}); force rebuilds anyway`,
      };
    }),
    getStatus: unary("/qim.admin.v1.ProjectionService/GetStatus", async () => ({ response: projectionStatusOut(await projection.status()) })),
  };

  const dispatchService: DispatchServiceServer = {
    audit: unary("/qim.admin.v1.DispatchService/Audit", async () => {
      const audits = await projection.projector.audit();
      return { response: { ok: audits.every((a) => a.verdict === "OK"), partitions: audits.map(partitionOut) } };
    }),
  };

  // one drill at a time across every server: RebuildDrill takes a lock in Redis
  const drillService: DrillServiceServer = {
    runRebuildDrill: serverStream<RunRebuildDrillRequest, DrillEvent>("/qim.admin.v1.DrillService/RunRebuildDrill", async (req, p, send) => {
      const wipe = req.wipe === "" ? "projection" : req.wipe;
      if (req.users.length > 0 && req.sample !== undefined) throw new InvalidArgumentError("sample", "give users or sample, not both");
      const reason = parseReason(req.reason, "reason", { required: false });
      const report = await projection.drill.run({
        ...(req.users.length > 0 ? { users: req.users.map((u) => ({ tenant: u.tenant, user: u.user })) } : {}),
        ...(req.sample !== undefined ? { sample: req.sample } : {}),
        wipe: wipe as DrillWipe,
        by: p.name,
        ...(reason ? { reason } : {}),
        onProgress: (pr) => send({ event: { $case: "progress", progress: drillProgressOut(pr) } }),
      });
      return { last: { event: { $case: "report", report: drillReportOut(report) } }, detail: describeDrill(report) };
    }),
  };

  // Watch streams until the client cancels, or until its certificate is on the deny list (checked
  // before each snapshot: refused PERMISSION_DENIED and audited like a revoked call); close() ends
  // them (UNAVAILABLE, the client reconnects) before waiting for the server's calls to finish.
  const observer = new Observer(projection, audit);
  const observeService: ObserveServiceServer = {
    watch: (call) => guarded(WATCH_RPC, call, async (_p, admit) => {
      const end = await observer.watch(call, watchIntervalMs(call.request), admit);
      return {
        answer: () => {
          if (end === "shutdown" && !call.cancelled) {
            call.emit("error", toServiceError({ code: grpc.status.UNAVAILABLE, domainCode: "UNAVAILABLE", message: "the admin server is shutting down" }, randomUUID()));
          }
        },
      };
    }, (e) => {
      if (!call.cancelled) call.emit("error", e);
    }),
  };

  if (typeof baseCreateHttp2Server !== "function") log("WARNING: this @grpc/grpc-js has no createHttp2Server hook: refused TLS handshakes will not be audited");
  const server = new AuditingServer({ "grpc.max_receive_message_length": 4 * 1024 * 1024 });
  server.onTlsRefusal = (err, socket, remote) => {
    let presented = "";
    let fingerprint = "";
    try {
      // Node 20 has already dropped the TLS state when it reports the refusal, so this finds no
      // certificate and the entry names only the reason and the address; kept for a runtime that
      // still has it
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
      principal: presented ? `unverified:${presented}` : "", role: "", rpc: "tls-handshake", arguments: { remote },
      result: "UNAUTHENTICATED", detail: reason ? String(reason) : err.message, durationMs: 0, requestId: randomUUID(), fingerprint,
    }).catch((e: unknown) => log(`audit log write failed: ${String(e)}`));
  };

  const servingStatus = {
    "": "SERVING",
    "qim.admin.v1.GroupService": "SERVING",
    "qim.admin.v1.MessageService": "SERVING",
    "qim.admin.v1.AuditService": "SERVING",
    "qim.admin.v1.ProjectionService": "SERVING",
    "qim.admin.v1.DispatchService": "SERVING",
    "qim.admin.v1.DrillService": "SERVING",
    "qim.admin.v1.ObserveService": "SERVING",
  } as const;
  const health = new HealthImplementation({ ...servingStatus });
  health.addToServer(server);
  let healthTimer: NodeJS.Timeout | undefined;
  let metricsServer: HttpServer | undefined;
  let metricsPort: number | null = null;
  let boundPort: number;
  const { host, port } = listenAddr(opts.listen, "listen");
  const m = opts.metricsListen ? listenAddr(opts.metricsListen, "metricsListen") : null;
  try {
    // the request message of each method, for the refusal of an undecodable request
    const protoDir = findProtoDir();
    const protoFiles = readdirSync(join(protoDir, "qim", "admin", "v1")).filter((f) => f.endsWith(".proto")).map((f) => `qim/admin/v1/${f}`);
    const packageDefinition = loadSync(protoFiles, { includeDirs: [protoDir] });
    const requestMessage = new Map<string, string>();
    for (const [serviceName, def] of Object.entries(packageDefinition)) {
      if ("format" in def) continue;
      const pkg = serviceName.slice(0, serviceName.lastIndexOf("."));
      for (const method of Object.values(def)) requestMessage.set(method.path, `${pkg}.${(method.requestType.type as { name: string }).name}`);
    }
    const messageOf = (path: string) => requestMessage.get(path) ?? "request";
    server.addService(refuseUndecodableInHandlers(GroupServiceService, messageOf), groups);
    server.addService(refuseUndecodableInHandlers(MessageServiceService, messageOf), messages);
    server.addService(refuseUndecodableInHandlers(AuditServiceService, messageOf), auditService);
    server.addService(refuseUndecodableInHandlers(ProjectionServiceService, messageOf), projectionService);
    server.addService(refuseUndecodableInHandlers(DispatchServiceService, messageOf), dispatchService);
    server.addService(refuseUndecodableInHandlers(DrillServiceService, messageOf), drillService);
    server.addService(refuseUndecodableInHandlers(ObserveServiceService, messageOf), observeService);
    new ReflectionService(packageDefinition).addToServer(server);

    const credentials = insecure
      ? grpc.ServerCredentials.createInsecure()
      : grpc.ServerCredentials.createSsl(Buffer.from(opts.tls!.caPem), [{ cert_chain: Buffer.from(opts.tls!.certPem), private_key: Buffer.from(opts.tls!.keyPem) }], true);
    opened.push({ what: "gRPC server", close: async () => server.forceShutdown() });
    boundPort = await new Promise<number>((resolve, reject) =>
      server.bindAsync(`${host.includes(":") ? `[${host}]` : host}:${port}`, credentials, (err, p) => (err ? reject(err) : resolve(p))));

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
  } catch (err) {
    if (metricsServer?.listening) metricsServer.close();
    await undo();
    throw err;
  }

  // the store's reachability drives the health status, so that probes see a server that cannot work
  const probe = async () => {
    const ok = await Promise.all(store.clients().map((c) => c.ping().then(() => true, () => false))).then((r) => r.every(Boolean));
    for (const svc of Object.keys(servingStatus)) health.setStatus(svc, ok ? "SERVING" : "NOT_SERVING");
    healthTimer = setTimeout(() => void probe(), 2000);
    healthTimer.unref();
  };
  void probe();

  if ((opts.relayIntervalMs ?? 1000) > 0) outboxRelay.start(opts.relayIntervalMs ?? 1000);
  const diagnostics = process.env[DIAGNOSTICS_ENV] === "1" ? await startDiagnostics(audit, log) : undefined;

  log(`qim admin server listening on ${host}:${boundPort} (${insecure ? "INSECURE plaintext" : "mTLS, client certificates required"})${metricsPort !== null ? `, metrics on http://${m!.host}:${metricsPort}/metrics` : ""}`);

  return {
    port: boundPort,
    metricsPort,
    engine,
    audit,
    projection,
    observer,
    reloadDenyList: (reason = "reload requested") => denyList ? denyList.reload(reason) : Promise.resolve(),
    async close() {
      if (healthTimer) clearTimeout(healthTimer);
      diagnostics?.stop();
      observer.close();
      await denyList?.close();
      await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
      await outboxRelay.stop();
      await (ownAuthority ? projection.close() : projection.stop());
      if (metricsServer) await new Promise<void>((resolve) => metricsServer!.close(() => resolve()));
      await audit.close();
      await store.close();
    },
  };
}
