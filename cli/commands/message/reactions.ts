import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { reactionsResult, type ReactionsCommandResult } from "../../message/results.js";
import { reactionsText } from "../../message/text.js";
import { positiveSeq } from "../../message/flags.js";
import { uuid } from "../../validate.js";

export default class MessageReactions extends ConnectedCommand<typeof MessageReactions> {
  static override summary = "Show a message's reactions: the counts and, with --users, who reacted.";
  static override description = `Spec 003 §4: the summary is absolute — every key with its count at summary_version, which grows by one with every change (devices keep the highest version they saw). Nobody reacted: version 0, no counts. A recalled message has none (its reactions were deleted with the recall).

--users lists one page of who reacted with what and when (--limit 1 to 1000, default 100; follow "nextCursor" with --cursor). Reactions made while the group had more than 1000 members, or after the message had 10,000 listed ones, are counted but not listed ("withoutDetail").

Any role. Exit codes: 0 shown (also none); 2 bad flags; 5 server unreachable; 6 refused certificate.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --group 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --seq 42",
    "<%= config.bin %> <%= command.id %> --group 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --seq 42 --users --limit 500 --output json",
  ];
  static override flags = {
    group: Flags.string({ char: "g", required: true, description: "the group's UUID" }),
    seq: Flags.string({ char: "s", required: true, description: "the message's conversation_seq" }),
    users: Flags.boolean({ default: false, description: "also list who reacted (one page)" }),
    limit: Flags.integer({ char: "n", min: 1, max: 1000, description: "with --users: reactions per page, 1 to 1000 (default 100)" }),
    cursor: Flags.string({ description: "with --users: the nextCursor of the previous page" }),
  };

  async run(): Promise<ReactionsCommandResult> {
    const group = uuid("--group", this.flags.group);
    const seq = positiveSeq("--seq", this.flags.seq);
    const tenant = this.tenant();
    const { client } = await this.connect();
    const r = reactionsResult({
      ...(await client.getReactions({ tenant, group, conversationSeq: BigInt(seq), withUsers: this.flags.users, cursor: this.flags.cursor ?? "", limit: this.flags.limit ?? 0 })),
      group,
    });
    this.log(reactionsText(r));
    return r;
  }
}
