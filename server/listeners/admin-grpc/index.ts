/**
 * The admin gRPC listener: the operators' API (qimctl, dashboards) over mTLS, every service of
 * admin-api/catalog.ts with its handlers (services/), health and reflection. Each call goes through
 * the node's pipeline (server/pipeline/); this file is the gRPC adapter: it reads the principal
 * from the connection's certificate, turns an undecodable request into a validation refusal, and
 * writes answers, stream events and statuses. It also audits the TLS handshakes it refuses.
 */
import { randomUUID } from "node:crypto";
import type { TLSSocket } from "node:tls";
import * as grpc from "@grpc/grpc-js";
import { HealthImplementation } from "grpc-health-check";
import { ADMIN_GRPC_MAX_RECEIVE_BYTES } from "../../../core/index.js";
import { listenAddr, type Listener, type OpenContext, type Opened } from "../../listener.js";
import { auditArguments } from "../../audit.js";
import { principalOf } from "../../pipeline/auth.js";
import { toServiceError } from "../../pipeline/errors.js";
import { cancelSignal, deadlineOf } from "../../pipeline/grpc-call.js";
import { UndecodableRequest, type Surface } from "../../pipeline/pipeline.js";
import type { ServerDeps, ServerStreamRpc, UnaryRpc } from "../../pipeline/rpc.js";
import { ReflectedServer, requestTypeOf, serveReflection } from "./reflection.js";
import { SERVICES } from "./services/index.js";

/**
 * grpc-js answers a request its deserializer throws on (truncated, a wire type that does not
 * exist, garbage) with INTERNAL "Error deserializing request" before any handler runs: bad input
 * would read as a server fault and go unaudited. Here each method's deserializer hands such a
 * request on as an UndecodableRequest, which the pipeline refuses as INVALID_ARGUMENT(request)
 * after authorising and auditing it like any other call.
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

/** How often the store's reachability is probed for the health status. */
const HEALTH_PROBE_MS = 2000;

async function open(ctx: OpenContext): Promise<Opened<{ port: number }>> {
  const { options: opts, insecureDev: insecure, log, pipeline } = ctx;
  const deps: ServerDeps = { runtime: ctx.runtime, audit: ctx.audit, observer: ctx.observer, cmd: ctx.cmd };
  const writeAudit = ctx.audit.append.bind(ctx.audit);

  if (typeof baseCreateHttp2Server !== "function") log("WARNING: this @grpc/grpc-js has no createHttp2Server hook: refused TLS handshakes will not be audited");
  const server = new AuditingServer({ "grpc.max_receive_message_length": ADMIN_GRPC_MAX_RECEIVE_BYTES });

  /** A gRPC call through the pipeline: `fail` sends an error status. */
  const through = (path: string, rpc: UnaryRpc | ServerStreamRpc, call: grpc.ServerUnaryCall<unknown, unknown> | grpc.ServerWritableStream<unknown, unknown>, surface: Surface,
    body: Parameters<typeof pipeline.run>[2]) => pipeline.run({
    rpc: path, roles: rpc.roles, mutates: rpc.mutates, request: call.request,
    principal: principalOf(call, insecure, server.peers.get(call.getPeer())?.cert),
    arguments: () => auditArguments(call.request),
    signal: cancelSignal(call), deadline: deadlineOf(call),
  }, surface, body);

  /** A unary RPC's grpc-js handler: the pipeline around its declaration. */
  function unaryHandler(path: string, rpc: UnaryRpc): grpc.handleUnaryCall<unknown, unknown> {
    return (call, callback) => through(path, rpc, call, { refuse: (m, id) => callback(toServiceError(m, id) as grpc.ServiceError) }, async ({ principal, admit, signal }) => {
      const { response, detail } = await rpc.handle(call.request as never, { principal, deps, admit, signal });
      return { detail, answer: () => callback(null, response) };
    });
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
      const refuse = (m: Parameters<Surface["refuse"]>[0], requestId: string) => {
        if (!call.cancelled) call.emit("error", toServiceError(m, requestId));
      };
      through(path, rpc, call, { refuse }, async ({ principal, admit, requestId, signal }) => {
        const end = await rpc.handle(call.request as never, { principal, deps, admit, signal, send, call: call as never });
        return {
          detail: end.detail,
          answer: () => {
            if (end.error) {
              refuse(end.error, requestId);
              return;
            }
            if (end.last !== undefined) send(end.last);
            call.end();
          },
        };
      });
    };
  }

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
      time: new Date().toISOString(),
      principal: presented ? `unverified:${presented}` : "", role: "", rpc: "tls-handshake", arguments: { remote },
      result: "UNAUTHENTICATED", detail: reason ? String(reason) : err.message, durationMs: 0, requestId: randomUUID(), fingerprint,
    }).catch((e: unknown) => log(`audit log write failed: ${String(e)}`));
  };

  // health answers for the server ("") and for each registered service
  const servingStatus: Record<string, "SERVING"> = Object.fromEntries([["", "SERVING"], ...SERVICES.map((svc) => [svc.name, "SERVING"])]);
  const health = new HealthImplementation({ ...servingStatus });
  health.addToServer(server);
  const { host, port } = listenAddr(opts.listen, "listen");
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
  let boundPort: number;
  try {
    boundPort = await new Promise<number>((resolve, reject) =>
      server.bindAsync(`${host.includes(":") ? `[${host}]` : host}:${port}`, credentials, (err, p) => (err ? reject(err) : resolve(p))));
  } catch (err) {
    server.forceShutdown();
    throw err;
  }

  // the store's reachability drives the health status, so that probes see a server that cannot work
  let healthTimer: NodeJS.Timeout | undefined;
  let closed = false;
  const probe = async () => {
    const ok = (await ctx.store.reachability()).every(Boolean);
    if (closed) return;
    for (const svc of Object.keys(servingStatus)) health.setStatus(svc, ok ? "SERVING" : "NOT_SERVING");
    healthTimer = setTimeout(() => void probe(), HEALTH_PROBE_MS);
    healthTimer.unref();
  };
  void probe();

  return {
    handle: { port: boundPort },
    summary: `${host}:${boundPort} (${insecure ? "INSECURE plaintext" : "mTLS, client certificates required"})`,
    async close() {
      closed = true;
      clearTimeout(healthTimer);
      // the calls in flight get their answers (and their audit records) before the engine stops
      await new Promise<void>((resolve) => server.tryShutdown(() => resolve()));
    },
  };
}

export const adminGrpcListener: Listener<{ port: number }> = {
  name: "admin-grpc",
  enabled: () => true,
  open,
};
