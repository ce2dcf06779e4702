/**
 * The node RPC listener (NodeService, node-to-node, issue 11; service.ts, server.ts): bound before
 * the engine runtime is built, because the node registers the address it got (node.listen may ask
 * the OS for a port); handed the runtime before the runtime starts; closed after the runtime
 * stopped, so that peers reach this node while its units are handed over.
 */
import { InvalidArgumentError } from "../../../core/index.js";
import type { Listener } from "../../listener.js";
import { openNodeService, type NodeService } from "./service.js";

export const nodeRpcListener: Listener<NodeService> = {
  name: "node-rpc",
  enabled: (o) => o.node !== undefined,
  async bind(ctx) {
    const { options: opts, insecureDev: insecure, log } = ctx;
    if (!opts.cluster) throw new InvalidArgumentError("node.listen", "the node service needs cluster options (a node id): it answers for the units this node owns");
    if (!insecure && !opts.node!.tls) throw new InvalidArgumentError("node.tls", "the node service needs a node certificate and key (qimctl certs issue --role node) unless --insecure-dev");
    const node = opts.node!;
    const svc = await openNodeService({
      listen: node.listen, insecureDev: insecure, log,
      ...(node.advertise ? { advertise: node.advertise } : {}),
      ...(node.tls ? { tls: { caPem: node.tls.caPem, certPem: node.tls.certPem, keyPem: node.tls.keyPem } } : {}),
    });
    return {
      advertise: svc.address,
      // the handlers and the relay's kick forwarder, before the node takes its first units
      attach: (runtime) => void svc.attach(runtime),
      cmd: () => svc.cmd,
      opened: {
        handle: svc,
        line: `node ${opts.cluster.nodeId}: node service on ${svc.address} (${insecure ? "INSECURE plaintext" : "mTLS, node certificates only"})`,
        close: () => svc.close(),
      },
    };
  },
};
