import { InvalidArgumentError, type Uuid } from "../base/index.js";
import type { LocalConnections } from "./local.js";
import { metrics } from "./metrics.js";
import type { OnlineRegistry, RegistryCluster } from "./registry.js";

/** Connections one `connections list` answers at most (the default is 100). */
export const CONNECTIONS_LIST_LIMIT = 1000;

/** One device connection as operators see it (`qimctl connections list`). */
export interface ConnectionRow {
  nodeId: string;
  tenant: Uuid;
  user: Uuid;
  device: string;
  sinceMs: number;
  remote: string;
  framesIn: number;
  framesOut: number;
  bufferedBytes: number;
}

export interface ConnectionQuery {
  tenant: Uuid;
  /** One user's connections (absent: every user of the tenant). */
  user?: Uuid;
  limit: number;
}

/** Another node as the operators' calls reach it. */
export interface PeerNode {
  nodeId: string;
  address: string;
}

/** The node RPCs behind a list and a kick on another node; set by the node's RPC listener. */
export interface ConnectionPeers {
  list(to: PeerNode, q: ConnectionQuery): Promise<ConnectionRow[]>;
  kick(to: PeerNode, tenant: Uuid, user: Uuid, device: string | null): Promise<number>;
}

export interface ConnectionsAnswer {
  connections: ConnectionRow[];
  /** More matched than `limit`: the answer is the first `limit` by node and connection time. */
  truncated: boolean;
  /** Nodes that were asked and did not answer. */
  unreachable: string[];
}

/**
 * What operators see of device connections across the cluster (issue 27: `qimctl connections
 * list|kick`): this node's answers from its LocalConnections, the others' through node RPC. A list
 * of one user asks only the nodes the online registry names for them; a list of a node asks that
 * node; otherwise every live node. Each node answers at most `limit` rows, the merged answer too.
 */
export class ConnectionsView {
  private peers: ConnectionPeers | null = null;

  constructor(private readonly local: LocalConnections, private readonly registry: OnlineRegistry, private readonly cluster: RegistryCluster | null) {}

  setPeers(p: ConnectionPeers): void {
    this.peers = p;
  }

  private get nodeId(): string {
    return this.cluster?.nodeId ?? "";
  }

  /** This node's connections that match, oldest first, at most `limit`. */
  localRows(q: ConnectionQuery): ConnectionRow[] {
    const conns = q.user ? this.local.ofUser(q.tenant, q.user) : this.local.all().filter((c) => c.tenant === q.tenant);
    return [...conns].sort((a, b) => a.since - b.since).slice(0, q.limit).map((c) => ({
      nodeId: this.nodeId, tenant: c.tenant, user: c.user, device: c.device, sinceMs: c.since, remote: c.remote,
      framesIn: c.framesIn, framesOut: c.framesOut, bufferedBytes: c.buffered,
    }));
  }

  /** Closes this node's connections of the user (one device's, or all), each with the door's kick code; how many. */
  localKick(tenant: Uuid, user: Uuid, device: string | null): number {
    let n = 0;
    for (const c of this.local.ofUser(tenant, user)) {
      if (device !== null && c.device !== device) continue;
      c.kick();
      n++;
    }
    metrics.kicked.inc(n);
    return n;
  }

  async list(q: ConnectionQuery & { node?: string }): Promise<ConnectionsAnswer> {
    const targets = await this.targets(q.tenant, q.user, q.node);
    const unreachable: string[] = [];
    const parts = await Promise.all(targets.map(async (t) => {
      if (t.nodeId === this.nodeId) return this.localRows(q);
      try {
        return await this.peers!.list(t, q);
      } catch {
        unreachable.push(t.nodeId);
        return [];
      }
    }));
    const all = parts.flat().sort((a, b) => a.nodeId.localeCompare(b.nodeId) || a.sinceMs - b.sinceMs);
    return { connections: all.slice(0, q.limit), truncated: all.length > q.limit, unreachable: unreachable.sort() };
  }

  async kick(tenant: Uuid, user: Uuid, device: string | null): Promise<{ closed: number; nodes: string[]; unreachable: string[] }> {
    const targets = await this.targets(tenant, user, undefined);
    const nodes: string[] = [];
    const unreachable: string[] = [];
    let closed = 0;
    await Promise.all(targets.map(async (t) => {
      try {
        const n = t.nodeId === this.nodeId ? this.localKick(tenant, user, device) : await this.peers!.kick(t, tenant, user, device);
        closed += n;
        if (n > 0) nodes.push(t.nodeId);
      } catch {
        unreachable.push(t.nodeId);
      }
    }));
    return { closed, nodes: nodes.sort(), unreachable: unreachable.sort() };
  }

  /** The nodes to ask: this one always (when it is the one named or none is), and the others as the query narrows them. */
  private async targets(tenant: Uuid, user: Uuid | undefined, node: string | undefined): Promise<PeerNode[]> {
    const self: PeerNode = { nodeId: this.nodeId, address: "" };
    if (!this.cluster || !this.peers) {
      if (node !== undefined && node !== this.nodeId) throw new InvalidArgumentError("node", `this server is not node ${JSON.stringify(node)} and has no cluster to ask`);
      return [self];
    }
    const live = this.cluster.liveNodes();
    if (node !== undefined) {
      if (node === this.nodeId) return [self];
      const n = live.get(node);
      if (!n) throw new InvalidArgumentError("node", `no live node ${JSON.stringify(node)} (qimctl cluster nodes lists them)`);
      return [{ nodeId: node, address: n.address }];
    }
    if (user !== undefined) return [self, ...(await this.registry.locate(tenant, [user])).map((l) => ({ nodeId: l.nodeId, address: l.address }))];
    return [self, ...[...live].filter(([id]) => id !== this.nodeId).map(([nodeId, n]) => ({ nodeId, address: n.address }))];
  }
}
