import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { cmdAckResult, type CmdAckResult } from "../../cmd/results.js";
import { ackText } from "../../cmd/text.js";
import { u64Flag, uuid } from "../../validate.js";

export default class CmdAck extends ConnectedCommand<typeof CmdAck> {
  static override summary = "Ack the user's latest CMD sync through a sequence, as /message/syncack does.";
  static override description = `Applies the user's LATEST sync generation (the last \`qimctl cmd sync\` or /message/sync): every channel that sync returned advances its durable read seq to what it returned (at most --last-seq), channels known only to the pending buffer get their durable row (active at = the pending time), then the pending entries are cleared. Only the latest generation counts, so an ack after a newer sync acks the newer one; a second ack of the same sync changes nothing (advanced 0). Safe to retry.

A clean-up failure after the durable write is a warning and still a success (exit 0). Needs the admin, operator or drill role; audited. Exit codes: 0 acked; 2 bad input; 5 server unreachable or the user's slot is moving (retry); 6 refused certificate or role.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --user 1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f --last-seq 9",
  ];
  static override flags = {
    user: Flags.string({ char: "u", required: true, description: "the user's UUID (with --tenant)" }),
    // a message seq is a uint64 on the wire, but no seq goes past 2^53−1 (the server refuses beyond)
    "last-seq": u64Flag("a message seq", 1n, BigInt(Number.MAX_SAFE_INTEGER))({ required: true, description: `the last message seq the sync returned, 1 to ${Number.MAX_SAFE_INTEGER}` }),
  };

  async run(): Promise<CmdAckResult> {
    const user = uuid("--user", this.flags.user);
    const last = this.flags["last-seq"];
    const tenant = this.tenant();
    const { client } = await this.connect();
    const out = cmdAckResult({ tenant, user }, Number(last), await client.cmdAck({ tenant, user, lastMessageSeq: last }));
    this.log(ackText(out));
    return out;
  }
}
