import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { UsageError } from "../../exit-codes.js";
import { connectionsListResult, type ConnectionsListResult } from "../../connections/results.js";
import { listText } from "../../connections/text.js";
import { uuid } from "../../validate.js";

export default class ConnectionsList extends ConnectedCommand<typeof ConnectionsList> {
  static override summary = "List device connections of the client gateway, across the cluster.";
  static override description = `One row per connection: device, user, node, when it connected, the peer address, frames in and out, and the bytes queued on its socket (a slow device's backlog). --user U asks only the nodes where U is online (the online registry); --node N asks that node; otherwise every live node. At most --limit rows (1 to 1000, default 100), ordered by node and connection time; "truncated" says more matched. A node that does not answer is named, and its connections are missing.

Any role. Exit codes: 0 listed (also none); 2 bad --user, --node or --limit, or both --user and --node; 5 server unreachable; 6 refused certificate.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %>",
    "<%= config.bin %> <%= command.id %> --user 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b",
    "<%= config.bin %> <%= command.id %> --node dev-2 --limit 500 --output json",
  ];
  static override flags = {
    user: Flags.string({ char: "u", description: "one user's connections (UUID)" }),
    node: Flags.string({ description: "one node's connections (its node id: qimctl cluster nodes)" }),
    limit: Flags.integer({ char: "n", min: 1, max: 1000, description: "rows at most, 1 to 1000 (default 100)" }),
  };

  async run(): Promise<ConnectionsListResult> {
    if (this.flags.user !== undefined && this.flags.node !== undefined) throw new UsageError("--node", "give --user or --node, not both");
    const user = this.flags.user === undefined ? "" : uuid("--user", this.flags.user);
    const node = this.flags.node ?? "";
    if (node !== "" && !/^[A-Za-z0-9._-]{1,64}$/.test(node)) throw new UsageError("--node", `not a node id: ${JSON.stringify(node.slice(0, 70))}`);
    const tenant = this.tenant();
    const { client } = await this.connect();
    const out = connectionsListResult({ ...(await client.listConnections({ tenant, user, nodeId: node, limit: this.flags.limit ?? 0 })), tenant });
    this.log(listText(out));
    return out;
  }
}
