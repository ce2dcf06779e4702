// The node RPC listener's settings (engine-free: the CLI reads them for `server start --help`).
import { readFile } from "node:fs/promises";
import type { ListenerSettings } from "../../listener.js";

/** The node service: loopback, a port the OS chooses (the registry records the bound one). */
export const NODE_RPC_DEFAULTS = { nodeListen: "127.0.0.1:0" } as const;

export interface NodeRpcSettings {
  /** NodeService's listener (null: off). */
  nodeListen: string | null;
  nodeAdvertise?: string;
  nodeTlsCert?: string;
  nodeTlsKey?: string;
  nodeTlsCa?: string;
}

export interface NodeRpcOptions {
  /**
   * The node service (NodeService, server/listeners/node-rpc/) on its own listener: needs
   * `cluster`, and a node certificate (`tls`: the node's certificate and key, the CA of its peers'
   * node certificates) unless insecureDev. Without it, commits on buckets other nodes own wait for
   * their owner's sweep.
   */
  node?: { listen: string; advertise?: string; tls?: { caPem: string | Buffer; certPem: string | Buffer; keyPem: string | Buffer } };
}

const KEYS = { advertise: "node.advertise", cert: "node.tls.cert", key: "node.tls.key", ca: "node.tls.ca" } as const;

export const nodeRpcSettings: ListenerSettings<NodeRpcSettings, NodeRpcOptions, typeof NODE_RPC_DEFAULTS> = {
  defaults: NODE_RPC_DEFAULTS,
  specs: [{
    section: "cluster", after: "cluster.heartbeat_interval",
    specs: [
      { key: "node.listen", kind: "address-or-off", default: NODE_RPC_DEFAULTS.nodeListen, description: "node-to-node RPC (NodeService, mTLS with node certificates) address host:port; port 0: one the OS chooses, recorded in the node registry; off: no node service (commits on buckets owned elsewhere wait for the owner's sweep). Needs node.tls.cert and node.tls.key unless insecure_dev" },
      { key: "node.advertise", kind: "address", description: "the host:port peers reach node.listen at, as the node registry records it (default: node.listen's host with the bound port; a loopback host is recorded as localhost, the name a node certificate carries)" },
      { key: "node.tls.cert", kind: "file", description: "the node certificate (PEM; qimctl certs issue --role node): presented by the node service and to peers" },
      { key: "node.tls.key", kind: "file", description: "the node certificate's private key (PEM)" },
      { key: "node.tls.ca", kind: "file", description: "CA certificate (PEM) peers' node certificates chain to (default: tls.ca, the admin CA)" },
    ],
  }],
  check(c) {
    const host = c.hostOf("node.listen");
    if (c.insecureDev && host !== null && !c.isLoopback(host) && !c.anyAddress) {
      c.fail("node.listen", `--insecure-dev makes the node service plaintext too, so it listens only on a loopback address, not ${host}; use node certificates (--node-tls-cert, --node-tls-key) with mTLS, or add --insecure-dev-allow-non-loopback`);
    }
    if (c.has(KEYS.cert) !== c.has(KEYS.key)) c.fail(c.has(KEYS.cert) ? KEYS.cert : KEYS.key, "a node certificate needs both node.tls.cert and node.tls.key");
    if (host === null) {
      for (const key of Object.values(KEYS)) if (c.has(key)) c.fail(key, "has no use with node.listen off");
    }
  },
  typed: (r) => {
    const opt = (name: string, k: string) => (r.values.has(k) ? { [name]: r.values.get(k) as string } : {});
    return {
      nodeListen: (r.values.get("node.listen") as string | null | undefined) ?? null,
      ...opt("nodeAdvertise", KEYS.advertise), ...opt("nodeTlsCert", KEYS.cert), ...opt("nodeTlsKey", KEYS.key), ...opt("nodeTlsCa", KEYS.ca),
    };
  },
  /**
   * The node service's listener with the node certificate (CA: node.tls.ca, else the admin CA), or
   * plaintext with --insecure-dev; none when node.listen is off, or under mTLS without a node
   * certificate (then the node says so at start-up: commits on buckets other nodes own wait for
   * their owner's sweep).
   */
  async options(s) {
    if (s.nodeListen === null) return {};
    const advertise = s.nodeAdvertise ? { advertise: s.nodeAdvertise } : {};
    if (s.insecureDev) return { node: { listen: s.nodeListen, ...advertise } };
    if (!s.nodeTlsCert || !s.nodeTlsKey) return {};
    return {
      node: {
        listen: s.nodeListen, ...advertise,
        tls: { caPem: await readFile(s.nodeTlsCa ?? s.tlsCa!), certPem: await readFile(s.nodeTlsCert), keyPem: await readFile(s.nodeTlsKey) },
      },
    };
  },
};
