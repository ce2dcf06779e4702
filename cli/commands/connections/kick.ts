import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { UsageError } from "../../exit-codes.js";
import { connectionsKickResult, type ConnectionsKickResult } from "../../connections/results.js";
import { kickText } from "../../connections/text.js";
import { uuid } from "../../validate.js";

export default class ConnectionsKick extends ConnectedCommand<typeof ConnectionsKick> {
  static override summary = "Close a user's device connections (one device's, or all), on every node that holds some.";
  static override description = `Each connection is closed with code 4410 ("closed by an operator"); the device may reconnect at once, because a kick does not revoke its token: to keep it out, revoke the token first (qimctl token revoke --user U --device D), then kick. Closing nothing (the user has no open connection) succeeds and says so. Audited.

Needs the operator or admin role. Exit codes: 0 done (also nothing to close); 2 bad --user or --device; 5 server unreachable; 6 refused certificate or role.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --user 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b",
    "<%= config.bin %> <%= command.id %> --user 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b --device phone --output json",
  ];
  static override flags = {
    user: Flags.string({ char: "u", required: true, description: "the user (UUID)" }),
    device: Flags.string({ char: "d", description: "one device of the user (default: every device)" }),
  };

  async run(): Promise<ConnectionsKickResult> {
    const user = uuid("--user", this.flags.user);
    const device = this.flags.device ?? null;
    if (device !== null && !/^[\x21-\x7e]{1,64}$/.test(device)) throw new UsageError("--device", "a device id is 1 to 64 printable ASCII characters");
    const tenant = this.tenant();
    const { client } = await this.connect();
    const out = connectionsKickResult({ ...(await client.kickConnections({ tenant, user, device: device ?? "" })), tenant, user, device });
    this.log(kickText(out));
    return out;
  }
}
