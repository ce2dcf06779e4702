import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { cmdSyncResult, type CmdSyncResult } from "../../cmd/results.js";
import { syncText } from "../../cmd/text.js";
import { UsageError } from "../../exit-codes.js";
import { CMD_SYNC_DEFAULT_LIMIT, CMD_SYNC_MAX_LIMIT } from "../../../core/base/index.js";
import { uuid } from "../../validate.js";

/** spec 001: the sync limit's default and maximum. */

export default class CmdSync extends ConnectedCommand<typeof CmdSync> {
  static override summary = "What the user's next /message/sync returns: their unacked CMD messages (a read-only peek unless --as-app).";
  static override description = `Answers the user's CMD offline sync as an application server's POST /message/sync would, at the node that owns the user's slot: the channels with something new (durable state merged with the owner's pending buffer; newest activity first, at most --limit messages in all), each from the user's read seq on.

By default it is a PEEK: it records no sync generation, so the application's next /message/syncack still applies the sync that application was answered (issue 24: a recorded look used to make the app's ack apply the operator's answer, and a command only the operator had seen was never delivered). JSON "generation" is null.

With --as-app it acts as the user's application: its answer becomes the user's latest generation, which the next \`qimctl cmd ack\` (or /message/syncack) applies — and the application's own earlier, unacked sync is no longer what its ack applies. Use it on a test user, or when the application is stopped and you act for it.

Needs the admin, operator or drill role; audited. Exit codes: 0 answered (also nothing to sync); 2 bad input; 5 server unreachable or the user's slot is moving (retry); 6 refused certificate or role.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --user 1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f",
    { description: "At most 10 messages, as JSON", command: "<%= config.bin %> <%= command.id %> --user 1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f --limit 10 --output json" },
    { description: "Act as the user's application: record the generation `cmd ack` applies", command: "<%= config.bin %> <%= command.id %> --user 1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f --as-app" },
  ];
  static override flags = {
    user: Flags.string({ char: "u", required: true, description: "the user's UUID (with --tenant)" }),
    limit: Flags.integer({ char: "l", default: CMD_SYNC_DEFAULT_LIMIT, description: `messages at most, 1 … ${CMD_SYNC_MAX_LIMIT}` }),
    "as-app": Flags.boolean({ default: false, description: "sync as the user's application: record the generation the next ack applies (default: a peek that records nothing)" }),
  };

  async run(): Promise<CmdSyncResult> {
    const user = uuid("--user", this.flags.user);
    const limit = this.flags.limit;
    if (!Number.isInteger(limit) || limit < 1 || limit > CMD_SYNC_MAX_LIMIT) throw new UsageError("--limit", `must be from 1 to ${CMD_SYNC_MAX_LIMIT}, got ${limit}`);
    const tenant = this.tenant();
    const { client } = await this.connect();
    const peek = !this.flags["as-app"];
    const out = cmdSyncResult({ ...(await client.cmdSync({ tenant, user, limit, peek })), tenant, user, recorded: !peek });
    this.log(syncText(out));
    return out;
  }
}
