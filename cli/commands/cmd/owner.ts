import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { cmdOwnerResult, type CmdOwnerResult } from "../../cmd/results.js";
import { ownerText } from "../../cmd/text.js";
import { uuid } from "../../validate.js";

export default class CmdOwner extends ConnectedCommand<typeof CmdOwner> {
  static override summary = "Which node serves a user's CMD sync: the owner of the user's slot.";
  static override description = `A user's CMD pending buffer, sync and ack live on the node that owns the user's slot (the session bucket {uNNN}); every node forwards the user's calls there. Prints that node, its node address and the fencing token of its lease; outside a cluster the server serves every user itself. Read only.

Any role. Exit codes: 0 answered (also "no owner right now"); 2 bad input; 5 server unreachable; 6 refused certificate or role.`;
  static override examples = ["<%= config.bin %> <%= command.id %> --user 1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f"];
  static override flags = {
    user: Flags.string({ char: "u", required: true, description: "the user's UUID (with --tenant)" }),
  };

  async run(): Promise<CmdOwnerResult> {
    const user = uuid("--user", this.flags.user);
    const tenant = this.tenant();
    const { client } = await this.connect();
    const out = cmdOwnerResult({ ...(await client.getCmdOwner({ tenant, user })), tenant, user });
    this.log(ownerText(out));
    return out;
  }
}
