/**
 * The client gateway listener (issue 27): devices' WebSocket door of the node. HTTP/1.1 over TLS
 * with the node's server certificate (plain only on loopback with --insecure-dev); the device's
 * token is verified at the upgrade, before the WebSocket exists (ws's noServer + handleUpgrade),
 * so a refused device costs one HTTP answer and no connection state. Compression stays off (ws
 * #1202). Frames: proto/qim/client/v1/frames.proto, docs/gateway.md.
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { Duplex } from "node:stream";
import { WebSocketServer, type WebSocket } from "ws";
import {
  GATEWAY_AUTH_FAILURE_BURST, GATEWAY_AUTH_FAILURE_RATE, GATEWAY_MAX_FRAME_BYTES, PER_USER_MSG_BURST_SECONDS, PER_USER_MSG_RATE, PER_USER_REACTION_BURST_SECONDS, PER_USER_REACTION_RATE, QimError,
  type BadgeState, type Uuid,
} from "../../../core/index.js";
import { KeyedRateLimiter } from "../../../core/support/index.js";
import { listenAddr, type Listener } from "../../listener.js";
import { deviceVerifierOf, FRAMES_SUBPROTOCOL, tokenOf, type DeviceIdentity, type DeviceVerifier } from "./auth.js";
import { CLOSE, GatewayConnection, type ConnectionDeps } from "./connection.js";
import { gatewayMetrics } from "./metrics.js";

/** A device socket's error listener: the close that follows is what the gateway handles. */
function ignoreError(): void {}

/** What the listener gives the node: its address and its connections (operators' `connections list`). */
export interface GatewayHandle {
  url: string;
  port: number;
  connections(): GatewayConnection[];
}

/** How the listener finds the device token verifier of the node it opens in. */
export type VerifierOf = (ctx: Parameters<NonNullable<Listener["open"]>>[0]) => DeviceVerifier;

const STATUS_TEXT: Record<number, string> = { 401: "Unauthorized", 429: "Too Many Requests" };

function refuseUpgrade(socket: Duplex, status: number, code: string, message: string, retryAfterMs = 0): void {
  const body = JSON.stringify(retryAfterMs > 0 ? { code, message, retryAfterMs } : { code, message });
  const retry = retryAfterMs > 0 ? `retry-after: ${Math.ceil(retryAfterMs / 1000)}\r\n` : "";
  socket.end(`HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? "Bad Request"}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${retry}connection: close\r\n\r\n${body}`);
}

export const gatewayListener = gatewayListenerWith(deviceVerifierOf);

export function gatewayListenerWith(verifierOf: VerifierOf): Listener<GatewayHandle> {
  return {
    name: "gateway",
    enabled: (o) => o.gateway !== undefined,
    async open(ctx) {
      const { options: opts, insecureDev: insecure, log } = ctx;
      const verifier = verifierOf(ctx);
      const { host, port } = listenAddr(opts.gateway!.listen, "gateway.listen");
      const all = new Set<GatewayConnection>();
      // failed upgrades per remote address: past the burst, the address is refused before any verify
      const authFailures = new KeyedRateLimiter({ rate: GATEWAY_AUTH_FAILURE_RATE, burst: GATEWAY_AUTH_FAILURE_BURST });
      // per_user_msg_rate: one bucket per user of this node, shared by the user's devices here
      const userMsgRate = opts.gateway!.userMsgRate ?? PER_USER_MSG_RATE;
      // a read sync is pushed to each of the user's devices here in one synchronous pass, each then
      // wanting the badge: the reads asked in the same tick are one read (a later event's, in a later
      // tick, starts its own, so it never gets a badge read before its mark)
      const badgeReads = new Map<string, Promise<BadgeState>>();
      const badge = (tenant: Uuid, user: Uuid): Promise<BadgeState> => {
        const key = `${tenant}/${user}`;
        let p = badgeReads.get(key);
        if (!p) {
          p = ctx.runtime.conversationList.service.badge(tenant, user);
          badgeReads.set(key, p);
          setImmediate(() => badgeReads.delete(key));
        }
        return p;
      };
      const userSends = new KeyedRateLimiter({ rate: userMsgRate, burst: Math.max(1, Math.ceil(userMsgRate * PER_USER_MSG_BURST_SECONDS)) });
      // per_user_reaction_rate: counted apart from the SENDs (spec 003 §4.1)
      const userReactionRate = opts.gateway!.userReactionRate ?? PER_USER_REACTION_RATE;
      const userReactions = new KeyedRateLimiter({ rate: userReactionRate, burst: Math.max(1, Math.ceil(userReactionRate * PER_USER_REACTION_BURST_SECONDS)) });
      const wss = new WebSocketServer({
        noServer: true, perMessageDeflate: false, maxPayload: GATEWAY_MAX_FRAME_BYTES, clientTracking: false,
        // a browser offers the frames' subprotocol beside its token's: the answer names the frames'
        handleProtocols: (protocols) => (protocols.has(FRAMES_SUBPROTOCOL) ? FRAMES_SUBPROTOCOL : false),
      });
      const plain = (_req: IncomingMessage, res: ServerResponse) => {
        const body = JSON.stringify({ code: "UPGRADE_REQUIRED", message: "this port serves the client gateway: a WebSocket upgrade with a device token (docs/gateway.md)" });
        res.writeHead(426, { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)), upgrade: "websocket", connection: "close" });
        res.end(body);
      };
      const server: Server = insecure ? createHttpServer(plain) : createHttpsServer({ cert: opts.tls!.certPem, key: opts.tls!.keyPem }, plain);
      // one set of hooks for every connection, made here and not in the upgrade's scope: a closure
      // made there kept that scope, with the upgrade request, its headers and the device token
      // (about 2 KiB), for as long as the connection lived
      const deps: ConnectionDeps = {
        runtime: ctx.runtime, pipeline: ctx.pipeline, log, userSends, userReactions, badge,
        // pushes start once AUTH succeeded (core/delivery's connections of this node)
        onAuthed: (c) => {
          ctx.runtime.delivery.local.add(c);
          if (ctx.runtime.delivery.draining) ctx.runtime.delivery.drainOne(c);
        },
        onClose: (c) => {
          all.delete(c);
          ctx.runtime.delivery.local.remove(c);
          gatewayMetrics.connections.set(all.size);
        },
      };
      const accept = (ws: WebSocket, identity: DeviceIdentity, remote: string, socket: Duplex): void => {
        all.add(new GatewayConnection(ws, identity, remote, deps, socket));
        gatewayMetrics.connections.set(all.size);
      };
      server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
        socket.on("error", ignoreError); // not a closure of this scope: it lives as long as the socket
        const address = req.socket.remoteAddress ?? "";
        const blocked = authFailures.wait(address);
        if (blocked > 0) {
          gatewayMetrics.upgradesRefused.inc({ reason: "auth_flood" });
          refuseUpgrade(socket, 429, "RATE_LIMITED", `too many failed upgrades from this address (at most ${GATEWAY_AUTH_FAILURE_BURST}, then ${GATEWAY_AUTH_FAILURE_RATE}/s): wait and retry`, blocked);
          return;
        }
        const failed = (): void => void authFailures.take(address);
        const token = tokenOf(req.headers);
        if (token === null) {
          failed();
          gatewayMetrics.upgradesRefused.inc({ reason: "no_token" });
          refuseUpgrade(socket, 401, "UNAUTHENTICATED", "no device token: send Authorization: Bearer <token> or the subprotocol qim-token.<token> (qimctl token issue)");
          return;
        }
        verifier.verify(token).then((identity) => {
          if (socket.destroyed) return;
          wss.handleUpgrade(req, socket, head, (ws) => accept(ws, identity, address, socket));
        }, (err: unknown) => {
          // TOKEN_INVALID, TOKEN_EXPIRED, TOKEN_REVOKED (core/tokens), or a failure to verify at all
          const reason = err instanceof QimError ? err.code.toLowerCase() : "error";
          failed();
          gatewayMetrics.upgradesRefused.inc({ reason });
          if (!(err instanceof QimError)) log(`gateway: token verification failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}`);
          refuseUpgrade(socket, 401, "UNAUTHENTICATED", err instanceof QimError ? err.message : "the device token could not be verified");
        });
      });
      const bound = await new Promise<number>((resolve, reject) => {
        server.once("error", reject);
        server.listen(port, host, () => resolve((server.address() as { port: number }).port));
      });
      // `cluster nodes` and the dashboard show this node's connections from here on
      ctx.runtime.delivery.publishCounts();
      const shown = host.includes(":") ? `[${host}]` : host;
      const url = `${insecure ? "ws" : "wss"}://${shown}:${bound}`;
      return {
        handle: { url, port: bound, connections: () => [...all] },
        line: `client gateway on ${url} (${insecure ? "INSECURE plain WebSocket" : "TLS, device tokens"})`,
        async close() {
          for (const c of all) c.close(CLOSE.GOING_AWAY, "the node is stopping");
          await new Promise<void>((resolve) => server.close(() => resolve()));
        },
      };
    },
  };
}
