import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { cmdAckResult, type CmdAckResult } from "../../cmd/results.js";
import { ackText } from "../../cmd/text.js";
import { uuid } from "../../validate.js";

export default class CmdAck extends ConnectedCommand<typeof CmdAck> {
  static override summary = "Ack the user's latest recorded CMD sync, as /message/syncack does.";
  static override description = `Applies the user's LATEST sync generation (the last /message/sync or \`qimctl cmd sync --as-app\`; a plain \`cmd sync\` is a peek and records none): every channel that sync returned advances its durable read seq to the last seq it returned, channels known only to the pending buffer get their durable row (active at = the pending time), then the pending entries are cleared. Only the latest generation counts, so an ack after a newer sync acks the newer one; a second ack of the same sync finds no generation (generation null, nothing acked). Safe to retry. The result names the generation applied.

--last-seq is what /message/syncack calls last_message_seq: spec 001 accepts it for compatibility and it neither selects nor bounds what is applied (one number cannot bound the seqs of several channels). It is optional.

A clean-up failure after the durable write is a warning and still a success (exit 0). Needs the admin, operator or drill role; audited. Exit codes: 0 acked; 2 bad input; 5 server unreachable or the user's slot is moving (retry); 6 refused certificate or role.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --user 1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f",
  ];
  static override flags = {
    user: Flags.string({ char: "u", required: true, description: "the user's UUID (with --tenant)" }),
    "last-seq": Flags.integer({ default: 1, min: 1, max: Number.MAX_SAFE_INTEGER, description: "sent as /message/syncack's last_message_seq (1 or more); like it, selects and bounds nothing" }),
  };

  async run(): Promise<CmdAckResult> {
    const user = uuid("--user", this.flags.user);
    const last = this.flags["last-seq"];
    const tenant = this.tenant();
    const { client } = await this.connect();
    const out = cmdAckResult({ ...(await client.cmdAck({ tenant, user, lastMessageSeq: BigInt(last) })), tenant, user });
    this.log(ackText(out));
    return out;
  }
}
