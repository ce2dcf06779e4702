import * as Args from "@oclif/core/args";
import { ConnectedCommand } from "../../base.js";
import { undrainResult, type UndrainResult } from "../../cluster/results.js";
import { undrainText } from "../../cluster/text.js";
import { UsageError } from "../../exit-codes.js";

export default class ClusterUndrain extends ConnectedCommand<typeof ClusterUndrain> {
  static override summary = "Undrain a node: the inverse of cluster drain — it takes its share of relay buckets, partitions and slots again.";
  static override description = `Clears the node's draining flag (cluster drain set it), without a restart: at their next heartbeat the nodes count it again and hand it its share of the units (the fencing tokens grow as they move, as in every hand-over). Undraining a node that is not draining succeeds and says so (changed: false). Any node's admin API can undrain any node. Not destructive (it gives a node work back), so no confirmation.

Needs the operator or admin role; audited. Exit codes: 0 undrained (or not draining); 2 no NODE; 3 no such node (see qimctl cluster nodes); 5 server unreachable; 6 refused certificate or role.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> node-2",
    { description: "In a script: the JSON result says whether anything changed", command: "<%= config.bin %> <%= command.id %> node-2 --output json" },
  ];
  static override args = {
    node: Args.string({ description: "the node id to undrain (qimctl cluster nodes lists them)" }),
  };

  async run(): Promise<UndrainResult> {
    const { args } = await this.parse(ClusterUndrain);
    const nodeId = args.node?.trim() ?? "";
    if (nodeId === "") throw new UsageError("NODE", "name the node to undrain, e.g. qimctl cluster undrain node-2 (qimctl cluster nodes lists them)");
    const { client } = await this.connect();
    const out = undrainResult(await client.undrainNode({ nodeId }));
    this.log(undrainText(out));
    return out;
  }
}
