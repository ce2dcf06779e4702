import * as Args from "@oclif/core/args";
import { ConnectedCommand } from "../../base.js";
import { drainResult, type DrainResult } from "../../cluster/results.js";
import { drainText } from "../../cluster/text.js";
import { yesFlag, type Destructive } from "../../confirm.js";
import { UsageError } from "../../exit-codes.js";

export default class ClusterDrain extends ConnectedCommand<typeof ClusterDrain> {
  static override summary = "Drain a node: hand its relay buckets, partitions and slots to the other nodes now; it takes no new units.";
  static override description = `For a rolling restart: drain a node, wait until \`qimctl cluster nodes\` shows it owning nothing, restart it (a restarted node takes its share again). The units move at once, not after a lease TTL; their fencing tokens grow, so anything the drained node still had in flight is refused rather than applied twice. Draining a node that drains already succeeds and says so (changed: false). Any node's admin API can drain any node.

Devices connected to the node's client gateway each get one RECONNECT hint with a delay spread over 10 s, and are closed (1001) 5 s after it if they stay (docs/gateway.md "Draining a node").

Confirmation: on a terminal it asks first; --yes skips the question. When stdin is NOT a terminal there is never a prompt, and the drain needs --yes (else exit 2, nothing changed).

Needs the operator or admin role; audited. Exit codes: 0 drained (or draining already); 2 no NODE, or no --yes without a terminal; 3 no such node (see qimctl cluster nodes); 5 server unreachable; 6 refused certificate or role; 130 not confirmed.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> node-2",
    { description: "In a rolling-restart script (no terminal): --yes is required", command: "<%= config.bin %> <%= command.id %> node-2 --yes --output json" },
  ];
  static override args = {
    node: Args.string({ description: "the node id to drain (qimctl cluster nodes lists them)" }),
  };
  static override flags = { yes: yesFlag };
  static override destructive: Destructive = { action: "drain the node" };

  async run(): Promise<DrainResult> {
    const { args } = await this.parse(ClusterDrain);
    const nodeId = args.node?.trim() ?? "";
    if (nodeId === "") throw new UsageError("NODE", "name the node to drain, e.g. qimctl cluster drain node-2 (qimctl cluster nodes lists them)");
    const { client } = await this.connect();
    await this.askFirst(`Drain node ${nodeId}? Its relay buckets, partitions and slots move to the other nodes now, and it takes no new ones until it restarts. [y/N] `);
    const out = drainResult(await client.drainNode({ nodeId }));
    this.log(drainText(out));
    return out;
  }
}
