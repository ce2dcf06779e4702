/**
 * The CMD sync HTTP API (spec 001, issue 13) for application servers: WuKongIM's legacy
 * `POST /message/sync` and `POST /message/syncack`, with its JSON exactly — request
 * `{uid, message_seq, limit}` (message_seq accepted, not used to select: the server keeps each
 * user's place), an array of legacy messages in answer; `{uid, last_message_seq}` →
 * `{"status":200}`; bad input an HTTP 400 `{"msg": …, "status": 400}` as WuKongIM's
 * wkhttp.ResponseError answers, with its validation messages (数据格式有误！, uid不能为空！,
 * limit不能为负数！, last_message_seq不能为空！).
 *
 * Beyond WuKongIM (which answers 400 for everything): a failure the client should retry — the
 * user's slot moving between owners (STALE_OWNER, a fenced write), no live owner, an owner or a
 * store that cannot be reached — is 503 with `Retry-After`, and a bug is 500; both bodies keep
 * WuKongIM's `{msg, status}` and add `code`, the domain code the admin API's metadata carries
 * (cmdHttpError: one table from the gRPC status of server/pipeline/errors.ts mapError).
 *
 * What is ours: TLS with client certificates from the admin PKI, and only the role `service`
 * (qimctl certs issue --role service) may call — an operator's certificate is refused 403, as a
 * service certificate is by every admin RPC. A user is (tenant, uid): the request's `tenant`, else
 * the server's sync.tenant. Each request is served at the owner of the user's slot (CmdAccess: one
 * hop over the node service after a move). Both paths move state (a sync records the generation
 * an ack applies), so both are audited like admin mutations, refusals too.
 */
import { randomUUID } from "node:crypto";
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { Socket } from "node:net";
import type { TLSSocket } from "node:tls";
import { status } from "@grpc/grpc-js";
import { CMD_HTTP_MAX_BODY_BYTES, cmdSyncLimit, InvalidArgumentError, parseHostPort, parseUuid, stripCommandSuffix, uuidToHex, type CmdMessage, type Uuid } from "../../../core/index.js";
import type { AuditRecord } from "../../audit.js";
import { SERVICE_ROLE, type Principal, type Role } from "../../pipeline/auth.js";
import { mapError } from "../../pipeline/errors.js";
import { Pipeline } from "../../pipeline/pipeline.js";
import { cmdSurfaceMetrics } from "../../routing/cmd-metrics.js";
import type { CmdAccess } from "../../routing/cmd-router.js";

/**
 * Requests of one connection that may wait for their turn (see startCmdHttpServer's turns); a
 * client pipelining deeper is cut off, since each waiting request is held in memory.
 */
export const CMD_HTTP_MAX_PIPELINED = 64;
export const SYNC_PATH = "/message/sync";
export const SYNC_ACK_PATH = "/message/syncack";

/** WuKongIM's validation messages (internal/api/message.go, internalv2/access/api message_sync.go). */
export const WK_MESSAGES = {
  badJson: "数据格式有误！",
  noUid: "uid不能为空！",
  negativeLimit: "limit不能为负数！",
  noLastSeq: "last_message_seq不能为空！",
} as const;

export interface CmdHttpOptions {
  /** host:port; port 0: one the OS chooses. */
  listen: string;
  /** The server certificate and key, and the CA client certificates must chain to (the admin PKI). Required unless insecureDev. */
  tls?: { caPem: string | Buffer; certPem: string | Buffer; keyPem: string | Buffer };
  /** Plain HTTP, every caller admitted (--insecure-dev, loopback only). */
  insecureDev?: boolean;
  /** sync.tenant: the tenant of a request that names none; null: each request names its own. */
  tenant: Uuid | null;
  access: () => CmdAccess;
  /** Writes one audit record (the admin API's log); resolves once it is durable. */
  audit: (rec: Omit<AuditRecord, "time">) => Promise<void>;
  /** Whether a certificate's SHA-256 fingerprint is on the deny list. */
  revoked?: (fingerprint: string) => boolean;
  log?: (line: string) => void;
}

export interface CmdHttpServer {
  port: number;
  /** https://host:port (http:// with insecureDev). */
  url: string;
  close(): Promise<void>;
}

/**
 * Retry-After (seconds) of a 503: the owner cache's life (DEFAULT_OWNER_CACHE_MS, 1 s), after
 * which a retry resolves the owner again; a lease moves within its TTL, so a client retrying
 * every second finds the new owner within a few tries.
 */
export const CMD_HTTP_RETRY_AFTER_S = 1;

/** The HTTP status of each gRPC status a domain error maps to (mapError); anything else not listed: 409 (a refused precondition). */
const HTTP_STATUS_OF_GRPC: Partial<Record<status, number>> = {
  [status.INVALID_ARGUMENT]: 400,
  [status.PERMISSION_DENIED]: 403,
  [status.NOT_FOUND]: 404,
  [status.UNAVAILABLE]: 503,
  [status.INTERNAL]: 500,
  [status.UNIMPLEMENTED]: 501,
  // written only to the audit and the metrics: the caller that went away reads no answer
  [status.CANCELLED]: 499,
  [status.DEADLINE_EXCEEDED]: 504,
};

/**
 * The answer to a failed request: bad input 400 in WuKongIM's exact `{msg, status}`; any other
 * failure `{msg, status, code}` with `code` the domain code (STALE_OWNER, UNAVAILABLE, INTERNAL,
 * …), and `retryAfterS` for a 503.
 */
export function cmdHttpError(err: unknown, requestId: string): { status: number; code: string; body: Record<string, unknown>; retryAfterS: number | null } {
  if (err instanceof HttpRefusal) return { status: err.status, code: err.status === 400 ? "INVALID_ARGUMENT" : "REQUEST_TOO_LARGE", body: { msg: err.message, status: err.status }, retryAfterS: null };
  const m = mapError(err, requestId);
  const http = HTTP_STATUS_OF_GRPC[m.code] ?? 409;
  if (http === 400) return { status: 400, code: m.domainCode, body: { msg: m.message, status: 400 }, retryAfterS: null };
  return { status: http, code: m.domainCode, body: { msg: m.message, status: http, code: m.domainCode }, retryAfterS: http === 503 ? CMD_HTTP_RETRY_AFTER_S : null };
}

/** An answer other than 200: WuKongIM's error shape. */
class HttpRefusal extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

/**
 * The legacy message id (WuKongIM's int64 message_id): the first 63 bits of the UUIDv7 — its
 * millisecond time and the first random bits — so that ids grow with time like WuKongIM's;
 * message_idstr is the same number as text, as WuKongIM writes it.
 */
export function legacyMessageId(messageId: Uuid): bigint {
  return BigInt(`0x${uuidToHex(messageId).slice(0, 16)}`) >> 1n;
}

/** One message as WuKongIM's MessageResp (JSON text: message_id is an int64 beyond a double's precision). */
export function legacyMessageJson(m: CmdMessage): string {
  const id = legacyMessageId(m.messageId);
  const body = {
    header: { no_persist: m.noPersist ? 1 : 0, red_dot: m.redDot ? 1 : 0, sync_once: m.syncOnce ? 1 : 0 },
    setting: 0,
    message_id: "@ID@",
    message_idstr: id.toString(),
    client_msg_no: m.clientMsgNo,
    message_seq: m.messageSeq,
    from_uid: m.from ?? "",
    channel_id: stripCommandSuffix(m.channel.channelId),
    channel_type: m.channel.channelType,
    expire: 0,
    timestamp: Math.floor(m.timestampMs / 1000),
    payload: Buffer.from(m.payload).toString("base64"),
  };
  return JSON.stringify(body).replace('"message_id":"@ID@"', `"message_id":${id.toString()}`);
}

/**
 * After a body over CMD_HTTP_MAX_BODY_BYTES, how much more of it is read and thrown away, and for
 * how long, before the connection is closed anyway: closing a socket with unread bytes sends a TCP
 * reset, which may destroy the 413 in the client's receive buffer before the client has read it
 * (Go's net/http discards 256 KiB the same way). A client that sends more is cut off.
 */
export const CMD_HTTP_DISCARD_BYTES = 1024 * 1024;
export const CMD_HTTP_DISCARD_MS = 5000;

/** A request's body, read from the start of the request's turn. */
interface Body {
  /** The text, or BodyTooLarge once it passes CMD_HTTP_MAX_BODY_BYTES. */
  text: Promise<string>;
  /** Resolves once the request has been read to its end (or given up on: see CMD_HTTP_DISCARD_*). */
  drained: Promise<void>;
  /** Whether the body passed the limit (the answer then closes the connection). */
  tooLarge(): boolean;
}

class BodyTooLarge extends HttpRefusal {
  constructor() {
    super(413, `request body over ${CMD_HTTP_MAX_BODY_BYTES} bytes`);
  }
}

/**
 * Reads the body, keeping at most CMD_HTTP_MAX_BODY_BYTES (exactly that many is accepted). A body
 * over it (or announcing more in Content-Length) is refused at once, and the rest is read and
 * thrown away, never destroyed under the answer.
 */
function readBody(req: IncomingMessage): Body {
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  let resolveText!: (text: string) => void;
  let rejectText!: (err: Error) => void;
  const text = new Promise<string>((resolve, reject) => {
    resolveText = resolve;
    rejectText = reject;
  });
  text.catch(() => undefined);
  let drainedNow!: () => void;
  const drained = new Promise<void>((resolve) => (drainedNow = resolve));
  let discardTimer: NodeJS.Timeout | undefined;
  const refuse = () => {
    over = true;
    chunks.length = 0;
    rejectText(new BodyTooLarge());
    discardTimer = setTimeout(drainedNow, CMD_HTTP_DISCARD_MS);
    discardTimer.unref();
  };
  const announced = Number(req.headers["content-length"]);
  if (Number.isFinite(announced) && announced > CMD_HTTP_MAX_BODY_BYTES) refuse();
  req.on("data", (c: Buffer) => {
    size += c.length;
    if (over) {
      if (size > CMD_HTTP_MAX_BODY_BYTES + CMD_HTTP_DISCARD_BYTES) drainedNow();
      return;
    }
    if (size > CMD_HTTP_MAX_BODY_BYTES) return refuse();
    chunks.push(c);
  });
  const done = () => {
    clearTimeout(discardTimer);
    drainedNow();
  };
  req.on("end", () => {
    if (!over) resolveText(Buffer.concat(chunks).toString("utf8"));
    done();
  });
  // the client went away mid-body: nobody reads the answer, but the audit says what happened
  const cut = () => {
    rejectText(new HttpRefusal(400, "the request ended before its body did"));
    done();
  };
  req.on("error", cut);
  req.on("close", cut);
  return { text, drained, tooLarge: () => over };
}

/** The JSON object of a request, or WuKongIM's "数据格式有误！". */
function jsonObject(text: string): Record<string, unknown> {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new HttpRefusal(400, WK_MESSAGES.badJson);
  }
  if (v === null || typeof v !== "object" || Array.isArray(v)) throw new HttpRefusal(400, WK_MESSAGES.badJson);
  return v as Record<string, unknown>;
}

/** A JSON integer field (absent: undefined); a string, fraction or other type is 数据格式有误！ as Go's binding refuses it. */
function intField(body: Record<string, unknown>, name: string): number | undefined {
  const v = body[name];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "number" || !Number.isSafeInteger(v)) throw new HttpRefusal(400, WK_MESSAGES.badJson);
  return v;
}

function stringField(body: Record<string, unknown>, name: string): string {
  const v = body[name];
  if (v === undefined || v === null) return "";
  if (typeof v !== "string") throw new HttpRefusal(400, WK_MESSAGES.badJson);
  return v;
}

export async function startCmdHttpServer(opts: CmdHttpOptions): Promise<CmdHttpServer> {
  const insecure = opts.insecureDev === true;
  if (!insecure && !opts.tls) throw new InvalidArgumentError("sync.listen", "the CMD sync HTTP API needs TLS (the admin server's certificate and CA) unless --insecure-dev");
  const hp = parseHostPort(opts.listen, { allowPortZero: true });
  if (!hp) throw new InvalidArgumentError("sync.listen", `sync.listen must be host:port, got "${opts.listen}"`);
  const log = opts.log ?? (() => undefined);
  const pipeline = new Pipeline({ audit: opts.audit, ...(opts.revoked ? { revoked: opts.revoked } : {}), log });

  /** The user of a request: (tenant, uid) as UUIDs. */
  function userOf(body: Record<string, unknown>): { tenant: Uuid; user: Uuid } {
    const uid = stringField(body, "uid").trim();
    if (uid === "") throw new HttpRefusal(400, WK_MESSAGES.noUid);
    const tenantText = stringField(body, "tenant").trim();
    if (tenantText === "" && opts.tenant === null) throw new HttpRefusal(400, "tenant不能为空！ (name the tenant in the request's \"tenant\" field, or set sync.tenant on the server)");
    let tenant: Uuid;
    let user: Uuid;
    try {
      tenant = tenantText === "" ? opts.tenant! : parseUuid(tenantText, "tenant");
      user = parseUuid(uid, "uid");
    } catch (err) {
      throw new HttpRefusal(400, (err as Error).message);
    }
    return { tenant, user };
  }

  async function sync(body: Record<string, unknown>): Promise<{ json: string; detail: string }> {
    const { tenant, user } = userOf(body);
    intField(body, "message_seq"); // accepted, not used to select (the server keeps the user's place)
    const limit = intField(body, "limit") ?? 0;
    if (limit < 0) throw new HttpRefusal(400, WK_MESSAGES.negativeLimit);
    const r = await opts.access().sync(tenant, user, cmdSyncLimit(limit));
    return { json: `[${r.messages.map(legacyMessageJson).join(",")}]`, detail: `${r.messages.length} message(s), generation ${r.generation}${r.servedBy ? ` at node ${r.servedBy}` : ""}` };
  }

  async function syncAck(body: Record<string, unknown>): Promise<{ json: string; detail: string }> {
    const { tenant, user } = userOf(body);
    const last = intField(body, "last_message_seq") ?? 0;
    if (last === 0) throw new HttpRefusal(400, WK_MESSAGES.noLastSeq);
    if (last < 0) throw new HttpRefusal(400, WK_MESSAGES.badJson);
    const r = await opts.access().ack(tenant, user, last);
    return { json: JSON.stringify({ status: 200 }), detail: `${r.advanced} row(s) advanced, ${r.cleared} pending cleared${r.warning ? `; warning: ${r.warning}` : ""}${r.servedBy ? ` at node ${r.servedBy}` : ""}` };
  }

  /**
   * One request of a connection at a time. Node's server parses pipelined requests and emits each
   * at once (it only orders the responses), so [sync, syncack, sync] written in one go ran
   * together: the ack found no record yet and the second sync answered the message again. A
   * request's turn starts once the previous request of its connection has been answered; the
   * owner orders one user's calls across connections (core CmdSyncApp).
   */
  const turns = new WeakMap<Socket, { last: Promise<void>; waiting: number }>();

  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const socket = req.socket;
    const queue = turns.get(socket) ?? { last: Promise.resolve(), waiting: 0 };
    turns.set(socket, queue);
    if (queue.waiting >= CMD_HTTP_MAX_PIPELINED) {
      // each waiting request is held in memory and cannot be answered out of turn
      log(`CMD sync HTTP: a connection from ${socket.remoteAddress ?? "?"} pipelined more than ${CMD_HTTP_MAX_PIPELINED} requests; closed`);
      socket.destroy();
      return;
    }
    queue.waiting++;
    const answered = new Promise<void>((resolve) => {
      res.once("finish", resolve);
      res.once("close", resolve);
    });
    queue.last = queue.last.then(async () => {
      // an earlier answer closed the connection (a 413): what was pipelined after it is not served
      if (!socket.destroyed && socket.writable) {
        serve(req, res);
        await answered;
      }
      queue.waiting--;
    });
  };

  /**
   * The caller as its certificate names it, read once per TLS 1.3 connection: getPeerCertificate
   * builds the whole certificate object (raw bytes, public key, extensions) on every call, ~3 % of
   * the server's CPU per /message/sync when read per request. TLS 1.3 has no renegotiation, so the
   * peer cannot change on a connection; an older protocol is read per request.
   */
  const peers = new WeakMap<Socket, { name: string; role: string; fingerprint: string }>();
  const peerOf = (socket: Socket): { name: string; role: string; fingerprint: string } => {
    if (insecure) return { name: "insecure-dev", role: SERVICE_ROLE, fingerprint: "" };
    const known = peers.get(socket);
    if (known) return known;
    const tls = socket as TLSSocket;
    const cert = tls.getPeerCertificate?.();
    const ou = cert?.subject?.OU;
    const peer = {
      name: (Array.isArray(cert?.subject?.CN) ? cert!.subject.CN[0] : cert?.subject?.CN) ?? "",
      role: (Array.isArray(ou) ? ou[0] : ou) ?? "",
      fingerprint: cert?.fingerprint256 ?? "",
    };
    if (tls.getProtocol?.() === "TLSv1.3") peers.set(socket, peer);
    return peer;
  };

  const serve = (req: IncomingMessage, res: ServerResponse) => {
    const requestId = randomUUID();
    const started = process.hrtime.bigint();
    const path = (req.url ?? "").split("?")[0]!;
    const { name, role, fingerprint } = peerOf(req.socket);
    const body = readBody(req);
    // the caller went away before its answer was written: a request still waiting its turn is not run
    const gone = new AbortController();
    res.once("close", () => {
      if (!res.writableFinished) gone.abort();
    });
    let argumentsOf: unknown = {};
    const answer = (status: number, json: string, headers: Record<string, string> = {}) => {
      cmdSurfaceMetrics.httpRequests.inc({ path: path === SYNC_PATH || path === SYNC_ACK_PATH ? path : "other", status: String(status) });
      const close = body.tooLarge();
      res.writeHead(status, {
        "content-type": "application/json; charset=utf-8", "content-length": String(Buffer.byteLength(json)), "x-qim-request-id": requestId,
        ...(close ? { connection: "close" } : {}), ...headers,
      });
      if (!close) {
        res.end(json);
        return;
      }
      // the answer goes out now, whole (its length is known); the connection closes once the rest
      // of the body is read: closing on unread bytes resets it, and the reset can destroy the
      // answer in the client's buffer before the client reads it
      res.write(json);
      void body.drained.then(() => res.end());
    };
    (async () => {
      // a refusal that needs no body still reads it (bounded), to know whether the connection can stay open
      await body.text.then(() => undefined, () => undefined);
      if (path !== SYNC_PATH && path !== SYNC_ACK_PATH) {
        return answer(404, JSON.stringify({ msg: `no such path: ${path.slice(0, 100)} (this port serves ${SYNC_PATH} and ${SYNC_ACK_PATH})`, status: 404 }));
      }
      if (req.method !== "POST") return answer(405, JSON.stringify({ msg: `${path} takes POST`, status: 405 }));
      // the role as the certificate names it, known or not: the audit records what was presented
      const principal: Principal = { name, role: role as Role, fingerprint: insecure ? "" : fingerprint };
      pipeline.run({ rpc: `POST ${path}`, roles: [SERVICE_ROLE], mutates: true, principal, arguments: () => argumentsOf, started, requestId, signal: gone.signal }, {
        refuse: (m) => {
          if (res.headersSent) return;
          if (m.code === status.PERMISSION_DENIED) answer(403, JSON.stringify({ msg: m.message, status: 403 }));
          else answer(500, JSON.stringify({ msg: m.message, status: 500, code: m.domainCode }), { "x-qim-error-code": m.domainCode });
        },
        forbidden: () => `role ${role || "none"} may not call ${path}: only service certificates (qimctl certs issue --role service) may`,
        failure: (err) => {
          const e = cmdHttpError(err, requestId);
          // a bug gets its stack in the server log, a retryable failure one line; neither reaches the client
          const line = e.status === 500 ? `request ${requestId} POST ${path} failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}`
            : e.status === 503 ? `request ${requestId} POST ${path} failed (retryable): ${err instanceof Error ? err.message : String(err)}` : null;
          return {
            result: e.code, detail: String(e.body.msg), log: line,
            reply: () => answer(e.status, JSON.stringify(e.body), {
              "x-qim-error-code": e.code,
              ...(e.retryAfterS !== null ? { "retry-after": String(e.retryAfterS) } : {}),
            }),
          };
        },
      }, async () => {
        const fields = jsonObject(await body.text);
        argumentsOf = { uid: fields.uid, tenant: fields.tenant, limit: fields.limit, message_seq: fields.message_seq, last_message_seq: fields.last_message_seq };
        const out = path === SYNC_PATH ? await sync(fields) : await syncAck(fields);
        return { detail: out.detail, answer: () => answer(200, out.json) };
      });
    })().catch((err: unknown) => log(`request ${requestId} POST ${path} failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}`));
  };

  const server: Server = insecure
    ? createHttpServer(handle)
    : createHttpsServer({ ca: opts.tls!.caPem, cert: opts.tls!.certPem, key: opts.tls!.keyPem, requestCert: true, rejectUnauthorized: true }, handle);
  server.keepAliveTimeout = 5000;
  const port = await new Promise<number>((resolve, reject) => {
    server.once("error", reject);
    server.listen(hp.port, hp.host, () => resolve((server.address() as { port: number }).port));
  });
  const host = hp.host.includes(":") ? `[${hp.host}]` : hp.host;
  return {
    port,
    url: `${insecure ? "http" : "https"}://${host}:${port}`,
    close: () => new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    }),
  };
}
