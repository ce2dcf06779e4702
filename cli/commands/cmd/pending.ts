import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { cmdPendingResult, type CmdPendingResult } from "../../cmd/results.js";
import { pendingText } from "../../cmd/text.js";
import { UsageError } from "../../exit-codes.js";
import { uuid } from "../../validate.js";
import { CMD_SYNC_DEFAULT_LIMIT, CMD_SYNC_MAX_LIMIT } from "../../../core/base/index.js";

export default class CmdPending extends ConnectedCommand<typeof CmdPending> {
  static override summary = "The owner's pending (not yet flushed) CMD conversations of a user.";
  static override description = `Asks the node that owns the user's slot for its pending buffer's view of the user: per channel the last seq and active time that concerned the user and the read seq the user starts from. Entries leave the buffer when a flush writes them to the durable state (qimctl cmd state) or an ack clears them. Read only.

Any role. Exit codes: 0 answered (also nothing pending); 2 bad input; 5 server unreachable or the user's slot is moving (retry); 6 refused certificate or role.`;
  static override examples = ["<%= config.bin %> <%= command.id %> --user 1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f --output json"];
  static override flags = {
    user: Flags.string({ char: "u", required: true, description: "the user's UUID (with --tenant)" }),
    limit: Flags.integer({ char: "l", default: CMD_SYNC_DEFAULT_LIMIT, description: `channels at most, 1 … ${CMD_SYNC_MAX_LIMIT}` }),
  };

  async run(): Promise<CmdPendingResult> {
    const user = uuid("--user", this.flags.user);
    const limit = this.flags.limit;
    if (!Number.isInteger(limit) || limit < 1 || limit > CMD_SYNC_MAX_LIMIT) throw new UsageError("--limit", `must be from 1 to ${CMD_SYNC_MAX_LIMIT}, got ${limit}`);
    const tenant = this.tenant();
    const { client } = await this.connect();
    const out = cmdPendingResult({ ...(await client.getCmdPending({ tenant, user, limit })), tenant, user });
    this.log(pendingText(out));
    return out;
  }
}
