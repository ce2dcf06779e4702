/**
 * The calling side of the node service: one grpc-js channel per peer address, over mTLS with this
 * node's certificate (the same one its own listener presents: a node certificate is server and
 * client), each peer's certificate checked against its address (the SANs `certs issue --role
 * node --host` wrote). A peer's handlers have the shape of the local ones (local.ts), so the
 * router calls either the same way.
 */
import * as grpc from "@grpc/grpc-js";
import { NODE_RPC_MAX_ANSWER_BYTES } from "../../core/base/index.js";
import {
  NodeServiceClient,
  type CmdAckRequest,
  type CmdAckResponse,
  type CmdFlushRequest,
  type CmdFlushResponse,
  type DeliverRequest,
  type DeliverResponse,
  type KickConnectionsRequest,
  type KickConnectionsResponse,
  type ListConnectionsRequest,
  type ListConnectionsResponse,
  type PushSessionChangesRequest,
  type PushSessionChangesResponse,
  type PushUserEventsRequest,
  type RoomsRequest,
  type RoomsResponse,
  type PushUserEventsResponse,
  type CmdPendingRequest,
  type CmdPendingResponse,
  type CmdSyncRequest,
  type CmdSyncResponse,
  type DescribeUserRequest,
  type DescribeUserResponse,
  type KickRequest,
  type KickResponse,
  type PushIntentsRequest,
  type PushIntentsResponse,
} from "../../admin-api/gen/qim/node/v1/node.js";
import type { NodeHandlers } from "./local.js";

/** How long one node call may take before the caller gives up on it (a kick is an optimisation; a lookup is on a request's path). */
export const NODE_RPC_DEADLINE_MS = 2000;

/** A node RPC that failed in transport or was refused by gRPC (not a NodeStatus answer). */
export class NodeCallError extends Error {
  constructor(readonly address: string, readonly code: grpc.status, message: string) {
    super(`node ${address}: ${message}`);
    this.name = "NodeCallError";
  }
}

export interface NodePeersOptions {
  /** This node's certificate and key and the CA of its peers; absent: plaintext (--insecure-dev). */
  tls?: { caPem: string | Buffer; certPem: string | Buffer; keyPem: string | Buffer };
  deadlineMs?: number;
}

export class NodePeers {
  private readonly clients = new Map<string, NodeServiceClient>();
  private readonly credentials: grpc.ChannelCredentials;
  private readonly deadlineMs: number;

  constructor(opts: NodePeersOptions) {
    this.credentials = opts.tls
      ? grpc.credentials.createSsl(Buffer.from(opts.tls.caPem), Buffer.from(opts.tls.keyPem), Buffer.from(opts.tls.certPem))
      : grpc.credentials.createInsecure();
    this.deadlineMs = opts.deadlineMs ?? NODE_RPC_DEADLINE_MS;
  }

  private client(address: string): NodeServiceClient {
    let c = this.clients.get(address);
    if (!c) {
      // a CMD sync answer carries up to CMD_SYNC_MAX_LIMIT messages with their payloads
      c = new NodeServiceClient(address, this.credentials, { "grpc.max_receive_message_length": NODE_RPC_MAX_ANSWER_BYTES });
      this.clients.set(address, c);
    }
    return c;
  }

  private unary<Req, Res>(address: string, method: "kick" | "describeUser" | "pushIntents" | "cmdSync" | "cmdAck" | "cmdPending" | "cmdFlush" | "deliver" | "pushUserEvents" | "pushSessionChanges" | "listConnections" | "kickConnections" | "rooms", req: Req): Promise<Res> {
    const client = this.client(address) as unknown as Record<string, (r: Req, md: grpc.Metadata, o: grpc.CallOptions, cb: (e: grpc.ServiceError | null, r?: Res) => void) => void>;
    return new Promise<Res>((resolve, reject) => {
      client[method]!.call(this.client(address), req, new grpc.Metadata(), { deadline: Date.now() + this.deadlineMs }, (err, res) => {
        if (err) reject(new NodeCallError(address, err.code, err.details || err.message));
        else resolve(res!);
      });
    });
  }

  /** The handlers of the node at `address`, called over the network. */
  at(address: string): NodeHandlers {
    return {
      kick: (req: KickRequest) => this.unary<KickRequest, KickResponse>(address, "kick", req),
      describeUser: (req: DescribeUserRequest) => this.unary<DescribeUserRequest, DescribeUserResponse>(address, "describeUser", req),
      pushIntents: (req: PushIntentsRequest) => this.unary<PushIntentsRequest, PushIntentsResponse>(address, "pushIntents", req),
      cmdSync: (req: CmdSyncRequest) => this.unary<CmdSyncRequest, CmdSyncResponse>(address, "cmdSync", req),
      cmdAck: (req: CmdAckRequest) => this.unary<CmdAckRequest, CmdAckResponse>(address, "cmdAck", req),
      cmdPending: (req: CmdPendingRequest) => this.unary<CmdPendingRequest, CmdPendingResponse>(address, "cmdPending", req),
      cmdFlush: (req: CmdFlushRequest) => this.unary<CmdFlushRequest, CmdFlushResponse>(address, "cmdFlush", req),
      deliver: (req: DeliverRequest) => this.unary<DeliverRequest, DeliverResponse>(address, "deliver", req),
      pushUserEvents: (req: PushUserEventsRequest) => this.unary<PushUserEventsRequest, PushUserEventsResponse>(address, "pushUserEvents", req),
      pushSessionChanges: (req: PushSessionChangesRequest) => this.unary<PushSessionChangesRequest, PushSessionChangesResponse>(address, "pushSessionChanges", req),
      listConnections: (req: ListConnectionsRequest) => this.unary<ListConnectionsRequest, ListConnectionsResponse>(address, "listConnections", req),
      kickConnections: (req: KickConnectionsRequest) => this.unary<KickConnectionsRequest, KickConnectionsResponse>(address, "kickConnections", req),
      rooms: (req: RoomsRequest) => this.unary<RoomsRequest, RoomsResponse>(address, "rooms", req),
    };
  }

  close(): void {
    for (const c of this.clients.values()) c.close();
    this.clients.clear();
  }
}
