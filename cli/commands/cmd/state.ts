import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { cmdStateResult, type CmdStateResult } from "../../cmd/results.js";
import { stateText } from "../../cmd/text.js";
import { UsageError } from "../../exit-codes.js";
import { uuid } from "../../validate.js";
import { CMD_SYNC_DEFAULT_LIMIT, CMD_SYNC_MAX_LIMIT } from "../../../core/base/index.js";

export default class CmdState extends ConnectedCommand<typeof CmdState> {
  static override summary = "A user's durable CMD conversation rows: read seq, deleted-to seq, active and updated times.";
  static override description = `The durable CMD conversation state of the user (spec 001 CMDConversationState, one row per command channel and type), newest activity first: what flushes and acks have written. What is not flushed yet is in \`qimctl cmd pending\`; a sync merges both. Read only.

Any role. Exit codes: 0 answered (also no rows); 2 bad input; 5 server unreachable; 6 refused certificate or role.`;
  static override examples = ["<%= config.bin %> <%= command.id %> --user 1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f"];
  static override flags = {
    user: Flags.string({ char: "u", required: true, description: "the user's UUID (with --tenant)" }),
    limit: Flags.integer({ char: "l", default: CMD_SYNC_DEFAULT_LIMIT, description: `rows at most, 1 … ${CMD_SYNC_MAX_LIMIT}` }),
  };

  async run(): Promise<CmdStateResult> {
    const user = uuid("--user", this.flags.user);
    const limit = this.flags.limit;
    if (!Number.isInteger(limit) || limit < 1 || limit > CMD_SYNC_MAX_LIMIT) throw new UsageError("--limit", `must be from 1 to ${CMD_SYNC_MAX_LIMIT}, got ${limit}`);
    const tenant = this.tenant();
    const { client } = await this.connect();
    const out = cmdStateResult({ ...(await client.getCmdState({ tenant, user, limit })), tenant, user });
    this.log(stateText(out));
    return out;
  }
}
