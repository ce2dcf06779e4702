/**
 * The node service's listener (issue 11): NodeService on its own port (the node.listen setting),
 * apart from the admin API, over mTLS with the node's certificate. Only a client certificate
 * whose OU is `node` (auth.ts NODE_ROLE) may call it — an operator's certificate is refused
 * PERMISSION_DENIED, as a node certificate is by every admin RPC (no admin RPC declares `node`).
 * Not audited: node calls are the engine's own traffic (a kick per commit batch), not an
 * operator's action; qim_node_rpc_served_total counts them.
 */
import * as grpc from "@grpc/grpc-js";
import { CallAbandonedError, InvalidArgumentError, NODE_RPC_MAX_RECEIVE_BYTES, parseHostPort } from "../../../core/index.js";
import { NODE_ROLE, principalOf, ROLES, type Role } from "../../pipeline/auth.js";
import { cancelSignal, deadlineOf } from "../../pipeline/grpc-call.js";
import { Pipeline, STATUS_NAME } from "../../pipeline/pipeline.js";
import { NodeServiceService, NodeStatus } from "../../../admin-api/gen/qim/node/v1/node.js";
import type { NodeHandlers } from "../../routing/local.js";
import { nodeMetrics } from "../../routing/metrics.js";

export interface NodeServerOptions {
  /** host:port; port 0 lets the OS choose (then `port` says which). */
  listen: string;
  /** The node certificate and key, and the CA peers' node certificates chain to. Required unless insecureDev. */
  tls?: { caPem: string | Buffer; certPem: string | Buffer; keyPem: string | Buffer };
  /** Plaintext, every caller admitted (--insecure-dev). */
  insecureDev?: boolean;
  handlers: NodeHandlers;
  log?: (line: string) => void;
}

export interface NodeServer {
  port: number;
  close(): Promise<void>;
}

const statusName = (s: NodeStatus) => NodeStatus[s]?.replace(/^NODE_STATUS_/, "") ?? String(s);

export async function startNodeServer(opts: NodeServerOptions): Promise<NodeServer> {
  const insecure = opts.insecureDev === true;
  if (!insecure && !opts.tls) throw new InvalidArgumentError("node.tls", "the node service needs a node certificate and key (node.tls.cert, node.tls.key) unless --insecure-dev");
  const hp = parseHostPort(opts.listen, { allowPortZero: true });
  if (!hp) throw new InvalidArgumentError("node.listen", `node.listen must be host:port, got "${opts.listen}"`);
  const server = new grpc.Server({ "grpc.max_receive_message_length": NODE_RPC_MAX_RECEIVE_BYTES });

  // node calls are the engine's own traffic: no audit, no deny list (a node certificate is retired by its CA)
  const pipeline = new Pipeline({ log: opts.log ?? (() => undefined) });
  // --insecure-dev admits every caller (its principal is the insecure admin)
  const roles: readonly Role[] = insecure ? ROLES : [NODE_ROLE];

  /** A node RPC through the pipeline: the caller must present a node certificate; the handler answers a NodeStatus. */
  function handler<Req, Res extends { status: NodeStatus }>(rpc: string, run: (req: Req) => Promise<Res>): grpc.handleUnaryCall<Req, Res> {
    return (call, callback) => {
      pipeline.run({ rpc, roles, mutates: false, principal: principalOf(call, insecure), arguments: () => ({}), signal: cancelSignal(call), deadline: deadlineOf(call) }, {
        refuse: (m) => {
          nodeMetrics.served.inc({ rpc, status: STATUS_NAME[m.code] ?? String(m.code) });
          callback({ code: m.code, details: m.message });
        },
        forbidden: (principal) => {
          const who = principal ? `${principal.name} (role ${principal.role ?? "none"})` : "a caller without a certificate subject";
          return `only node certificates (OU ${NODE_ROLE}) may call the node service; ${who} may not`;
        },
        failure: (err) => err instanceof CallAbandonedError ? {
          // the calling node gave up (its deadline, or it went away): nothing to log, no stack
          result: err.code, detail: err.message, log: null,
          reply: () => {
            nodeMetrics.served.inc({ rpc, status: err.code });
            callback({ code: err.reason === "deadline" ? grpc.status.DEADLINE_EXCEEDED : grpc.status.CANCELLED, details: err.message });
          },
        } : ({
          result: "INTERNAL", detail: "", log: `node service ${rpc} failed: ${err instanceof Error ? err.stack ?? err.message : String(err)}`,
          reply: () => {
            nodeMetrics.served.inc({ rpc, status: "INTERNAL" });
            callback({ code: grpc.status.INTERNAL, details: "internal error; see the node's log" });
          },
        }),
      }, async () => {
        const res = await run(call.request);
        return {
          answer: () => {
            nodeMetrics.served.inc({ rpc, status: statusName(res.status) });
            callback(null, res);
          },
        };
      });
    };
  }

  server.addService(NodeServiceService, {
    kick: handler("Kick", (req) => opts.handlers.kick(req)),
    describeUser: handler("DescribeUser", (req) => opts.handlers.describeUser(req)),
    pushIntents: handler("PushIntents", (req) => opts.handlers.pushIntents(req)),
    cmdSync: handler("CmdSync", (req) => opts.handlers.cmdSync(req)),
    cmdAck: handler("CmdAck", (req) => opts.handlers.cmdAck(req)),
    cmdPending: handler("CmdPending", (req) => opts.handlers.cmdPending(req)),
    cmdFlush: handler("CmdFlush", (req) => opts.handlers.cmdFlush(req)),
    deliver: handler("Deliver", (req) => opts.handlers.deliver(req)),
    pushUserEvents: handler("PushUserEvents", (req) => opts.handlers.pushUserEvents(req)),
    pushSessionChanges: handler("PushSessionChanges", (req) => opts.handlers.pushSessionChanges(req)),
    listConnections: handler("ListConnections", (req) => opts.handlers.listConnections(req)),
    kickConnections: handler("KickConnections", (req) => opts.handlers.kickConnections(req)),
    rooms: handler("Rooms", (req) => opts.handlers.rooms(req)),
  });
  const credentials = insecure
    ? grpc.ServerCredentials.createInsecure()
    : grpc.ServerCredentials.createSsl(Buffer.from(opts.tls!.caPem), [{ cert_chain: Buffer.from(opts.tls!.certPem), private_key: Buffer.from(opts.tls!.keyPem) }], true);
  const host = hp.host.includes(":") ? `[${hp.host}]` : hp.host;
  const port = await new Promise<number>((resolve, reject) => server.bindAsync(`${host}:${hp.port}`, credentials, (err, p) => (err ? reject(err) : resolve(p))));
  return {
    port,
    close: () => new Promise<void>((resolve) => {
      // a peer's call in flight gets its answer; one that hangs is cut after a second
      const force = setTimeout(() => server.forceShutdown(), 1000);
      server.tryShutdown(() => { clearTimeout(force); resolve(); });
    }),
  };
}
