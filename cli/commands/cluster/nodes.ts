import { ConnectedCommand } from "../../base.js";
import { nodesResult, type NodesResult } from "../../cluster/results.js";
import { nodesText } from "../../cluster/text.js";

export default class ClusterNodes extends ConnectedCommand<typeof ClusterNodes> {
  static override summary = "List the engine cluster's nodes: address, version, heartbeat age and the units each owns.";
  static override description = `Every engine server is a node: it registers in Redis with a heartbeat lease and owns a share of the relay buckets (256), the dispatch partitions and the user slots (256 session buckets), each with a fencing token. A node that stops heartbeating is DEAD after the lease TTL and its units move to the live nodes; a draining node hands its units over and takes no new ones.

Columns: NODE (* marks the node whose admin API answered), ADDRESS (its node service, node.listen), VERSION, STARTED, HEARTBEAT (time since its last heartbeat), STATE (alive, draining, DEAD), and the counts of RELAY BUCKETS, PARTITIONS, SLOTS and ROOMS (room units) it owns. --output json prints { "nodes": [ { "nodeId", "address", "version", "startedAtMs", "heartbeatAgeMs", "alive", "draining", "owned": { "relayBuckets", "partitions", "slots", "rooms" } } ], "answeredBy" }.

Any role. Exit codes: 0 listed; 5 server unreachable; 6 refused certificate or role.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %>",
    { description: "The relay buckets each node owns, in a script", command: "<%= config.bin %> <%= command.id %> --output json | jq '.nodes[] | {nodeId, relay: .owned.relayBuckets}'" },
  ];

  async run(): Promise<NodesResult> {
    const { client } = await this.connect();
    const out = nodesResult(await client.listNodes({}));
    this.log(nodesText(out));
    return out;
  }
}
