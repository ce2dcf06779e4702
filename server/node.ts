import { randomUUID } from "node:crypto";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import type { TLSSocket } from "node:tls";
import * as grpc from "@grpc/grpc-js";
import { HealthImplementation } from "grpc-health-check";
import {
  EngineRuntime,
  InvalidArgumentError,
  parseHostPort,
  parseUuid,
  ProjectionRefusedError,
  refusedVerdict,
  RedisStore,
  registry,
  type CassandraAuthorityOptions,
  type CmdSyncOptions,
  type ClusterOptions,
  type ConversationOptions,
  type ConversationService,
  type ConversationStateAuthority,
  type DispatchIdentity,
  type TopologyConfig,
} from "../core/index.js";
import { failpointsArmed } from "../core/support/index.js";
import { SERVER_NODE_FLAGS, semiSpaceMiB } from "./node-flags.js";
import { auditArguments, AuditLog, type AuditRecord, type AuditRotation } from "./audit.js";
import { allowed, principalOf, type CallWithAuth, type Principal, type Role } from "./pipeline/auth.js";
import { DenyList } from "./deny-list.js";
import { startCmdHttpServer, type CmdHttpServer } from "./listeners/app-http/cmd-http.js";
import { cmdBadFiles, publishCmdBadFile } from "./routing/cmd-bad.js";
import { cmdOf } from "./routing/cmd-local.js";
import { localCmdAccess, type CmdAccess } from "./routing/cmd-router.js";
import { openNodeService, type NodeService } from "./listeners/node-rpc/service.js";
import { mapError, toServiceError, type MappedError } from "./pipeline/errors.js";
import { DIAGNOSTICS_ENV, startDiagnostics } from "./diagnostics.js";
import { Observer } from "./observe.js";
import { serverLog } from "./log.js";
import { ReflectedServer, requestTypeOf, serveReflection } from "./listeners/admin-grpc/reflection.js";
import type { ServerDeps, ServerStreamRpc, UnaryRpc } from "./pipeline/rpc.js";
import { SERVICES } from "./listeners/admin-grpc/services/index.js";

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
  /** Size-based rotation of the audit log (default none: one file that grows; the server process's settings rotate at 64 MiB). */
  auditRotation?: AuditRotation | null;
  engine?: ConversationOptions;
  dispatch?: DispatchIdentity;
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
  /** How long start-up waits for every Redis to answer (default 10 s); a refusal fails at once. */
  storeVerifyTimeoutMs?: number;
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
  /** The background unread audit's step interval in ms (default UNREAD_AUDIT_INTERVAL_MS); 0: off. */
  unreadAuditIntervalMs?: number;
  /** How often the projection consumer polls every partition when idle (default 250 ms; appends kick it sooner). */
  projectionPollMs?: number;
  /**
   * Makes this server a node of the engine cluster (issue 11): its id, version and lease timing;
   * the address it registers is its node service's when `node` is given (the bound port), else
   * `address` as given ("" for none).
   */
  cluster?: ClusterOptions;
  /**
   * The node service (NodeService, admin-api/node/) on its own listener: needs `cluster`, and a
   * node certificate (`tls`: the node's certificate and key, the CA of its peers' node
   * certificates) unless insecureDev. Without it, commits on buckets other nodes own wait for
   * their owner's sweep.
   */
  node?: { listen: string; advertise?: string; tls?: TlsFiles };
  /**
   * The CMD sync HTTP API (admin-api/cmd-http.ts, the sync.listen setting): /message/sync and
   * /message/syncack over TLS with the server's certificate (`tls`), service certificates only;
   * `tenant` answers for requests that name none (sync.tenant).
   */
  sync?: { listen: string; tenant: string | null };
  /** CMD sync's options (core/cmd-sync CmdSyncOptions): the daemon gives its data_dir for the pending file. */
  cmd?: CmdSyncOptions;
  /**
   * One line per notable event. A start-up refused by the session projection logs one line per
   * partition ("session projection: partition N VERDICT: detail") and a last line saying so.
   * Default: stderr, each line stamped with its UTC time (admin-api/log.ts).
   */
  log?: (line: string) => void;
}

export interface AdminServer {
  /** The gRPC port actually bound. */
  port: number;
  metricsPort: number | null;
  /** The engine this server runs (conversations, dispatch log and relay, session projection). */
  runtime: EngineRuntime;
  conversations: ConversationService;
  audit: AuditLog;
  /** The session projection this server runs (consumer, registration task, drills). */
  projection: EngineRuntime["projection"];
  /** The dashboard's watchers (ObserveService.Watch); `active` counts the streams being served. */
  observer: Observer;
  /** This node's NodeService (null without one): its port, the address it registered, its router. */
  node: NodeService | null;
  /** The CMD sync HTTP API (null without sync.listen): its port and https://host:port. */
  sync: CmdHttpServer | null;
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

/**
 * How long a scrape of /metrics waits for the projection status it reads first (the gauges only a
 * status read keeps current) before it answers with the values it has: an unreachable store must
 * not make the scrape itself fail, since `qim_store_reachable` is what says so.
 */
const SCRAPE_STATUS_WAIT_MS = 2000;

/**
 * How long a stop waits on Redis for its graceful steps (answers in flight, the units handed over,
 * the CMD buffer's last flush, leaving the node registry) before it asks whether Redis still
 * answers: a lease TTL's worth. When it does not (a PING within STOP_REDIS_PROBE_MS), every Redis
 * connection is dropped (RedisStore.disconnect), so each wait still open fails at once and the
 * stop goes on: the units expire by their TTL instead, and the CMD buffer is kept in its file.
 * With a Redis that answers nothing (stopped, or busy with a long script) each step would
 * otherwise wait out its command timeout in turn: more than 15 s in issue 22, 22 s measured. A
 * Redis that answers is waited for (a stop that is slow, not stuck), checked again each grace.
 */
export const STOP_REDIS_GRACE_MS = 5000;
/** How long the stop's PING may take to count as Redis answering (a loaded loopback Redis answers in milliseconds). */
export const STOP_REDIS_PROBE_MS = 1000;

const STATUS_NAME = Object.fromEntries(Object.entries(grpc.status).filter(([, v]) => typeof v === "number").map(([k, v]) => [v, k])) as Record<number, string>;

/** host:port of a listening socket; port 0 asks the OS for a free one. */
function listenAddr(addr: string, field: string): { host: string; port: number } {
  const hp = parseHostPort(addr, { allowPortZero: true });
  if (!hp) throw new InvalidArgumentError(field, `${field} must be host:port, got "${addr}"`);
  return hp;
}

/**
 * A grpc-js server that also audits TLS handshakes it refuses (no client certificate, another CA,
 * out of validity): those never reach a handler. grpc-js builds its HTTP/2 server in
 * createHttp2Server, which is not part of its typed surface, so the hook is checked at start.
 */
type Http2Factory = (credentials: grpc.ServerCredentials) => import("node:http2").Http2SecureServer;
const baseCreateHttp2Server = (grpc.Server.prototype as unknown as { createHttp2Server?: Http2Factory }).createHttp2Server;

class AuditingServer extends ReflectedServer {
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
  const log = opts.log ?? serverLog;
  if (!opts.insecureDev && !opts.tls) throw new InvalidArgumentError("tls", "TLS material is required (CA, server certificate and key) unless --insecure-dev");
  const insecure = opts.insecureDev === true;
  if (insecure) {
    log("WARNING: --insecure-dev: plaintext gRPC, no client certificates, every caller is an admin. Never use this outside a development machine.");
  }
  if (insecure && opts.denyList) throw new InvalidArgumentError("denyList", "a deny list needs mTLS: --insecure-dev has no client certificates to refuse");
  if (semiSpaceMiB() === null) {
    log(`note: node runs with V8's default young generation; start the server with node ${SERVER_NODE_FLAGS.join(" ")} (bin/qim-admin-server.js does) for less CPU per request (docs/operator-guide.md, "The server's node flags")`);
  }
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
    // until start-up has verified the store, its one error line is verify()'s, not a log of each attempt
    onError: (err) => { if (storeVerified) throttled(/^Redis /.test(err.message) ? err.message : `redis: ${err.message}`); },
  });
  let storeVerified = false;

  // What start-up opened, closed in reverse order should a later step fail: a server that does not
  // start leaves no connection, timer or listener behind.
  const opened: { what: string; close: () => Promise<void> }[] = [{ what: "store", close: () => store.close() }];
  const undo = async () => {
    for (const o of opened.reverse()) await o.close().catch((err: unknown) => log(`start-up cleanup of the ${o.what} failed: ${String(err)}`));
  };

  let runtime: EngineRuntime;
  let audit: AuditLog;
  let denyList: DenyList | undefined;
  let nodeService: NodeService | null = null;
  try {
    if (opts.denyList) {
      denyList = await DenyList.open(opts.denyList, { log, ...(opts.denyListPollMs !== undefined ? { pollMs: opts.denyListPollMs } : {}) });
      const list = denyList;
      opened.push({ what: "deny list", close: () => list.close() });
    }
    // one clear line, before anything else touches the store, when Redis is away or refuses the
    // credentials or the TLS handshake (then without waiting out the timeout)
    await store.verify(opts.storeVerifyTimeoutMs ?? 10_000);
    storeVerified = true;
    // the node service is bound before the runtime: the node registers the address it got
    if (opts.node && !opts.cluster) throw new InvalidArgumentError("node.listen", "the node service needs cluster options (a node id): it answers for the units this node owns");
    if (opts.node && opts.cluster) {
      if (!insecure && !opts.node.tls) throw new InvalidArgumentError("node.tls", "the node service needs a node certificate and key (qimctl certs issue --role node) unless --insecure-dev");
      const svc = await openNodeService({
        listen: opts.node.listen, insecureDev: insecure, log,
        ...(opts.node.advertise ? { advertise: opts.node.advertise } : {}),
        ...(opts.node.tls ? { tls: { caPem: opts.node.tls.caPem, certPem: opts.node.tls.certPem, keyPem: opts.node.tls.keyPem } } : {}),
      });
      nodeService = svc;
      opened.push({ what: "node service", close: () => svc.close() });
    }
    runtime = new EngineRuntime({
      store,
      ...(opts.engine?.keyPrefix !== undefined ? { keyPrefix: opts.engine.keyPrefix } : {}),
      ...(opts.engine ? { conversation: opts.engine } : {}),
      ...(opts.dispatch ? { dispatch: opts.dispatch } : {}),
      ...(opts.authority ? { authority: opts.authority } : {}),
      ...(opts.cassandra ? { cassandra: opts.cassandra } : {}),
      // the runtime's defaults (retention, relay interval) stand unless the options name them
      projection: {
        ...(opts.retentionMs !== undefined ? { retentionMs: opts.retentionMs } : {}),
        ...(opts.projectionPollMs !== undefined ? { projector: { pollIntervalMs: opts.projectionPollMs } } : {}),
        onError: (err) => throttled(`session projection: ${err instanceof Error ? err.message : String(err)}`),
      },
      relay: { onError: (err) => log(`relay: ${(err as Error).message}`) },
      unreadAudit: {
        ...(opts.unreadAuditIntervalMs !== undefined ? { intervalMs: opts.unreadAuditIntervalMs } : {}),
        onError: (err) => throttled(`unread audit: ${err instanceof Error ? err.message : String(err)}`),
      },
      ...(opts.relayIntervalMs !== undefined ? { relayIntervalMs: opts.relayIntervalMs } : {}),
      ...(opts.cluster ? { cluster: { ...opts.cluster, address: nodeService?.address ?? opts.cluster.address } } : {}),
      ...(opts.cmd ? { cmd: opts.cmd } : {}),
      log,
    });
    // the handlers and the relay's kick forwarder, before the node takes its first units
    nodeService?.attach(runtime);
    log(`conversation-set authority: ${runtime.projection.authority.describe()}`);
    const engineRuntime = runtime;
    opened.push({ what: "engine", close: () => engineRuntime.stop() });

    // Fail closed: the projection's start-up audit records the log's identity on first use and
    // refuses a log that is not ours (naming every partition) or that lost acknowledged records
    // (BEYOND_HIGH); either way the runtime does not start, so the relay never appends to it.
    const report = await runtime.start();
    if (report.epochBumped) log(`session projection: started at epoch ${report.epoch} after a loss (see above)`);
    const bad = await publishCmdBadFile(runtime);
    if (bad) log(`WARNING: the CMD pending file did not decode and was renamed ${bad}: its updates were not restored (the owners' catch-up scan re-derives them); qimctl cluster nodes shows it`);
    audit = await AuditLog.open(opts.auditPath, { sync: opts.auditSync ?? true, rotation: opts.auditRotation ?? null, log });
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
  const projection = runtime.projection;
  const engine = runtime.conversations;

  const writeAudit = async (rec: Omit<AuditRecord, "time">) => audit.append({ time: new Date().toISOString(), ...rec });

  /**
   * Every RPC goes through here: authenticate, authorise, run the body, audit (mutations and
   * refusals) before answering, map errors in one place. `body` returns what to audit and how to
   * answer; `fail` sends an error status.
   */
  function guarded(
    rpc: string, decl: { roles: readonly Role[]; mutates: boolean }, call: GuardedCall,
    body: (p: Principal, admit: () => void, requestId: string) => Promise<{ detail?: string | undefined; answer: () => void }>,
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
      if (!principal || !allowed(decl.roles, principal)) {
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
        const { detail, answer } = await body(principal, admit, requestId);
        if (decl.mutates) await record("OK", detail ?? "");
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
        if (decl.mutates) await record(STATUS_NAME[m.code] ?? String(m.code), m.message);
        refuse(m);
      }
    })().catch((err: unknown) => {
      // the audit log could not be written: the answer must not pretend otherwise
      log(`request ${requestId} ${rpc}: audit log write failed: ${err instanceof Error ? err.message : String(err)}`);
      refuse({ code: grpc.status.INTERNAL, domainCode: "INTERNAL", message: `audit log unavailable (request ${requestId})` });
    });
  }

  const cluster = runtime.cluster;
  const observer = new Observer(projection, audit, cluster ? () => cluster.nodes() : undefined, () => cmdBadFiles(runtime));
  const cmdAccess = (): CmdAccess => nodeService?.cmd ?? localCmdAccess(cmdOf(runtime), runtime.cluster?.nodeId ?? "");
  const deps: ServerDeps = { runtime, audit, observer, cmd: cmdAccess };

  /** A unary RPC's grpc-js handler: the pipeline around its declaration. */
  function unaryHandler(path: string, rpc: UnaryRpc): grpc.handleUnaryCall<unknown, unknown> {
    return (call, callback) => guarded(path, rpc, call, async (principal, admit) => {
      const { response, detail } = await rpc.handle(call.request as never, { principal, deps, admit });
      return { detail, answer: () => callback(null, response) };
    }, (e) => callback(e as grpc.ServiceError));
  }

  /**
   * A server-streaming RPC's handler: events go out as the handler sends them; its last one is sent
   * only after the audit entry is written (so that a client that has the final event knows it is
   * audited). A client that went away does not stop the handler: a drill runs to its end.
   */
  function streamHandler(path: string, rpc: ServerStreamRpc): grpc.handleServerStreamingCall<unknown, unknown> {
    return (call) => {
      const send = (ev: unknown) => {
        if (!call.cancelled && call.writable) call.write(ev);
      };
      guarded(path, rpc, call, async (principal, admit, requestId) => {
        const end = await rpc.handle(call.request as never, { principal, deps, admit, send, call: call as never });
        return {
          detail: end.detail,
          answer: () => {
            if (end.error) {
              if (!call.cancelled) call.emit("error", toServiceError(end.error, requestId));
              return;
            }
            if (end.last !== undefined) send(end.last);
            call.end();
          },
        };
      }, (e) => {
        if (!call.cancelled) call.emit("error", e);
      });
    };
  }

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

  // health answers for the server ("") and for each registered service
  const servingStatus: Record<string, "SERVING"> = Object.fromEntries([["", "SERVING"], ...SERVICES.map((svc) => [svc.name, "SERVING"])]);
  const health = new HealthImplementation({ ...servingStatus });
  health.addToServer(server);
  let healthTimer: NodeJS.Timeout | undefined;
  let metricsServer: HttpServer | undefined;
  let metricsPort: number | null = null;
  let syncServer: CmdHttpServer | null = null;
  let boundPort: number;
  const { host, port } = listenAddr(opts.listen, "listen");
  const m = opts.metricsListen ? listenAddr(opts.metricsListen, "metricsListen") : null;
  try {
    // the request message of each method (from the served descriptors), for the refusal of an undecodable request
    const messageOf = (path: string) => requestTypeOf(path) ?? "request";
    for (const svc of SERVICES) {
      const handlers: grpc.UntypedServiceImplementation = {};
      for (const [method, rpc] of Object.entries(svc.rpcs) as [string, UnaryRpc | ServerStreamRpc][]) {
        const path = svc.definition[method]!.path;
        handlers[method] = rpc.kind === "unary" ? unaryHandler(path, rpc) : streamHandler(path, rpc);
      }
      server.addService(refuseUndecodableInHandlers(svc.definition, messageOf), handlers);
    }
    serveReflection(server);

    const credentials = insecure
      ? grpc.ServerCredentials.createInsecure()
      : grpc.ServerCredentials.createSsl(Buffer.from(opts.tls!.caPem), [{ cert_chain: Buffer.from(opts.tls!.certPem), private_key: Buffer.from(opts.tls!.keyPem) }], true);
    opened.push({ what: "gRPC server", close: async () => server.forceShutdown() });
    boundPort = await new Promise<number>((resolve, reject) =>
      server.bindAsync(`${host.includes(":") ? `[${host}]` : host}:${port}`, credentials, (err, p) => (err ? reject(err) : resolve(p))));

    if (opts.sync) {
      const tenant = opts.sync.tenant === null ? null : parseUuid(opts.sync.tenant, "sync.tenant");
      syncServer = await startCmdHttpServer({
        listen: opts.sync.listen, insecureDev: insecure, tenant, access: cmdAccess, log,
        ...(opts.tls ? { tls: opts.tls } : {}),
        audit: (rec) => writeAudit(rec),
        ...(denyList ? { revoked: (fp: string) => denyList!.has(fp) } : {}),
      });
      const started = syncServer;
      opened.push({ what: "CMD sync HTTP API", close: () => started.close() });
    }
    if (m) {
      metricsServer = createHttpServer((req, res) => {
        if (req.url !== "/metrics") { res.writeHead(404).end("not found\n"); return; }
        // the queue depths and dead letters, the epoch another server bumped, the verdicts of a
        // consumer that stopped polling: read now (shared with the dashboards' reads), so that
        // each scrape sees them as of the scrape
        new Promise<void>((resolve) => {
          const wait = setTimeout(resolve, SCRAPE_STATUS_WAIT_MS);
          observer.snapshot().catch(() => undefined).finally(() => {
            clearTimeout(wait);
            resolve();
          });
        }).then(() => registry.metrics()).then(
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
    const ok = (await store.reachability()).every(Boolean);
    for (const svc of Object.keys(servingStatus)) health.setStatus(svc, ok ? "SERVING" : "NOT_SERVING");
    healthTimer = setTimeout(() => void probe(), 2000);
    healthTimer.unref();
  };
  void probe();

  const diagnostics = process.env[DIAGNOSTICS_ENV] === "1" ? await startDiagnostics(audit, log) : undefined;

  if (syncServer) log(`CMD sync HTTP API on ${syncServer.url} (${insecure ? "INSECURE plain HTTP" : "TLS, service certificates only"})`);
  if (nodeService) log(`node ${runtime.cluster!.nodeId}: node service on ${nodeService.address} (${insecure ? "INSECURE plaintext" : "mTLS, node certificates only"})`);
  else if (runtime.cluster) log(`node ${runtime.cluster.nodeId}: no node service (no node certificate): commits on buckets other nodes own wait for their owner's sweep`);
  log(`qim admin server listening on ${host}:${boundPort} (${insecure ? "INSECURE plaintext" : "mTLS, client certificates required"})${metricsPort !== null ? `, metrics on http://${m!.host}:${metricsPort}/metrics` : ""}`);

  return {
    port: boundPort,
    metricsPort,
    runtime,
    conversations: engine,
    audit,
    projection,
    observer,
    node: nodeService,
    sync: syncServer,
    reloadDenyList: (reason = "reload requested") => denyList ? denyList.reload(reason) : Promise.resolve(),
    async close() {
      let cut: NodeJS.Timeout | undefined;
      let waited = 0;
      const watch = () => {
        cut = setTimeout(() => {
          waited += STOP_REDIS_GRACE_MS;
          void store.answers(STOP_REDIS_PROBE_MS).then((answers) => {
            if (cut === undefined) return; // the stop finished meanwhile
            if (answers) { watch(); return; }
            log(`stop: Redis did not let the stop finish within ${waited} ms and does not answer: dropping its connections (units expire by their lease TTL)`);
            store.disconnect();
          });
        }, STOP_REDIS_GRACE_MS);
        cut.unref();
      };
      watch();
      if (healthTimer) clearTimeout(healthTimer);
      diagnostics?.stop();
      observer.close();
      audit.stopFollowers();
      runtime.sessionView.closeWatchers();
      await denyList?.close();
      await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
      await syncServer?.close();
      // the units are handed over first (runtime.stop), while peers can still reach us
      await runtime.stop();
      await nodeService?.close();
      if (metricsServer) await new Promise<void>((resolve) => metricsServer!.close(() => resolve()));
      await audit.close();
      clearTimeout(cut);
      cut = undefined;
      await store.close();
    },
  };
}
