/**
 * The node service of one engine server, in two steps because of a chicken-and-egg: the node
 * registry must record the address peers reach the node at, which is only known once the
 * listener is bound (node.listen may ask the OS for a port), while the handlers need the running
 * engine. So: open() binds the listener (calls that arrive before attach() are answered
 * STALE_OWNER — the node owns nothing yet), the runtime is built with `address`, attach() hands
 * the engine over and installs the relay's kick forwarder.
 */
import { parseHostPort, slotOfUser, type EngineRuntime } from "../../../core/index.js";
import { isLoopbackHost } from "../../settings/resolve.js";
import { NodeStatus } from "../../../admin-api/gen/qim/node/v1/node.js";
import { NodePeers } from "../../routing/client.js";
import { maybeCmdOf } from "../../routing/cmd-local.js";
import { CmdRouter } from "../../routing/cmd-router.js";
import { localNode, type NodeHandlers } from "../../routing/local.js";
import { NodeRouter } from "../../routing/router.js";
import { roomTransport } from "../../routing/rooms-transport.js";
import { startNodeServer } from "./server.js";

export interface NodeServiceOptions {
  /** host:port (port 0: the OS chooses). */
  listen: string;
  /** host:port peers reach it at (default: the listen host with the bound port; loopback as localhost). */
  advertise?: string;
  /** This node's certificate and key, and the CA of peers' node certificates; absent with insecureDev. */
  tls?: { caPem: string | Buffer; certPem: string | Buffer; keyPem: string | Buffer };
  insecureDev?: boolean;
  log?: (line: string) => void;
}

export interface NodeService {
  /** The port bound. */
  port: number;
  /** What the node registry records: host:port peers call. */
  address: string;
  /** Set by attach(). */
  router: NodeRouter | null;
  /** Set by attach(): the CMD sync intent router (installed with runtime.cmd.setRouter) and the surfaces' access at the owner. */
  cmd: CmdRouter | null;
  attach(runtime: EngineRuntime): NodeRouter;
  close(): Promise<void>;
}

/** What peers are told: the advertised address, else the listen host (loopback as localhost, the name node certificates carry) and the bound port. */
export function advertisedAddress(listen: string, port: number, advertise?: string): string {
  if (advertise) return advertise;
  const host = parseHostPort(listen, { allowPortZero: true })!.host;
  if (isLoopbackHost(host)) return `localhost:${port}`;
  return `${host.includes(":") && !host.startsWith("[") ? `[${host}]` : host}:${port}`;
}

export async function openNodeService(opts: NodeServiceOptions): Promise<NodeService> {
  let handlers: NodeHandlers | null = null;
  const notYet = "this node is starting: it owns nothing yet";
  const server = await startNodeServer({
    listen: opts.listen,
    ...(opts.tls ? { tls: opts.tls } : {}),
    insecureDev: opts.insecureDev === true,
    ...(opts.log ? { log: opts.log } : {}),
    handlers: {
      kick: (req) => handlers ? handlers.kick(req) : Promise.resolve({ status: NodeStatus.NODE_STATUS_STALE_OWNER, kicked: [], owners: [], detail: notYet }),
      describeUser: (req) => handlers ? handlers.describeUser(req) : Promise.resolve({ status: NodeStatus.NODE_STATUS_STALE_OWNER, slot: 0, conversations: 0, detail: notYet }),
      pushIntents: (req) => handlers ? handlers.pushIntents(req) : Promise.resolve({ status: NodeStatus.NODE_STATUS_STALE_OWNER, accepted: 0, dropped: 0, owners: [], detail: notYet }),
      cmdSync: (req) => handlers ? handlers.cmdSync(req) : Promise.resolve({ status: NodeStatus.NODE_STATUS_STALE_OWNER, messages: [], generation: 0n, detail: notYet }),
      cmdAck: (req) => handlers ? handlers.cmdAck(req) : Promise.resolve({ status: NodeStatus.NODE_STATUS_STALE_OWNER, advanced: 0, cleared: 0, warning: "", generation: 0n, detail: notYet }),
      cmdPending: (req) => handlers ? handlers.cmdPending(req) : Promise.resolve({ status: NodeStatus.NODE_STATUS_STALE_OWNER, views: [], detail: notYet }),
      cmdFlush: (req) => handlers ? handlers.cmdFlush(req) : Promise.resolve({ status: NodeStatus.NODE_STATUS_REJECTED, nodeId: "", rows: 0, batches: 0, failedBatches: 0, detail: notYet }),
      deliver: (req) => handlers ? handlers.deliver(req) : Promise.resolve({ status: NodeStatus.NODE_STATUS_OK, pushed: 0, detail: notYet }),
      pushUserEvents: (req) => handlers ? handlers.pushUserEvents(req) : Promise.resolve({ status: NodeStatus.NODE_STATUS_OK, pushed: 0, detail: notYet }),
      pushSessionChanges: (req) => handlers ? handlers.pushSessionChanges(req) : Promise.resolve({ status: NodeStatus.NODE_STATUS_OK, taken: 0, detail: notYet }),
      listConnections: (req) => handlers ? handlers.listConnections(req) : Promise.resolve({ status: NodeStatus.NODE_STATUS_OK, nodeId: "", connections: [], detail: notYet }),
      kickConnections: (req) => handlers ? handlers.kickConnections(req) : Promise.resolve({ status: NodeStatus.NODE_STATUS_OK, closed: 0, detail: notYet }),
      rooms: (req) => handlers ? handlers.rooms(req) : Promise.resolve({ status: NodeStatus.NODE_STATUS_REJECTED, detail: notYet, errorCode: "", errorDetails: "" }),
    },
  });
  const address = advertisedAddress(opts.listen, server.port, opts.advertise);
  const peers = new NodePeers(opts.tls ? { tls: opts.tls } : {});
  const svc: NodeService = {
    port: server.port,
    address,
    router: null,
    cmd: null,
    attach(runtime) {
      const cluster = runtime.cluster;
      if (!cluster) throw new Error("the node service needs a runtime with cluster options");
      const local = localNode(runtime, cluster, slotOfUser, address);
      handlers = local;
      const router = new NodeRouter({ ownership: cluster, local, peers });
      cluster.setKickForwarder(router.forwardKick);
      // the delivery consumer's batches, the read-sync events and the list changes for devices connected to other nodes
      runtime.delivery.setForwarder(router.forwardDelivery, router.forwardUserEvents, router.forwardSessionChanges, router.connectionPeers);
      svc.router = router;
      // rooms' writer calls to the owners of their units, their broadcasts and counts to nodes
      runtime.rooms.setTransport(roomTransport({ router, self: cluster.nodeId, local, peers, addressOf: (id) => cluster.liveNodes().get(id)?.address || null }));
      // CMD intents of users owned elsewhere go to their owners' PushIntents from now on
      const api = maybeCmdOf(runtime);
      if (api) {
        const cmd = new CmdRouter({ api, ownership: cluster, router, slotOf: slotOfUser, nodes: () => cluster.nodes(), ...(opts.log ? { log: opts.log } : {}) });
        api.setRouter(cmd);
        svc.cmd = cmd;
      }
      return router;
    },
    async close() {
      handlers = null;
      await server.close();
      peers.close();
    },
  };
  return svc;
}
