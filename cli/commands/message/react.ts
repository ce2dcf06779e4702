import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { reactResult, type ReactCommandResult } from "../../message/results.js";
import { reactText } from "../../message/text.js";
import { positiveSeq, reasonFlag } from "../../message/flags.js";
import { uuid } from "../../validate.js";

export default class MessageReact extends ConnectedCommand<typeof MessageReact> {
  static override summary = "Add or remove a reaction as a user (a support action, audited).";
  static override description = `Spec 003 §4: the reaction is made as --user, who must be an ACTIVE member able to see the message (not recalled, not an event). It is idempotent on (group, seq, user, key): adding a reaction the user has, or removing one they do not have, changes nothing ("changed": false, exit 0), so a retry is safe.

A reaction is never a message: no unread, no reordering of anyone's conversation list, no push notification. The message's summary (absolute counts, summary_version + 1) changes in one atomic step, and the group's members online get a REACTION_UPDATE (at most one per message per 2 s per device). Who reacted is kept (with when) while the group has at most 1000 members and the message fewer than 10,000 such rows; past that only the counts.

--reaction is 1 to 64 bytes of UTF-8 without spaces or control characters (an emoji, or a short name such as thumbs_up). A message carries at most 64 distinct keys.

Needs the operator or admin role; audited with --reason. Exit codes: 0 done (or nothing to change); 2 bad flags or --reaction; 3 no such message (absent, trimmed, an event, or not visible to the user); 4 the message is recalled, the group dissolved, or the message has 64 keys; 5 server unreachable; 6 refused certificate or role, or the user is no ACTIVE member.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --group 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --seq 42 --user 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b --reaction 👍 --reason 'ticket 1234: the app cannot react'",
    "<%= config.bin %> <%= command.id %> --group 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --seq 42 --user 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b --reaction 👍 --remove --reason 'ticket 1234' --output json",
  ];
  static override flags = {
    group: Flags.string({ char: "g", required: true, description: "the group's UUID" }),
    seq: Flags.string({ char: "s", required: true, description: "the message's conversation_seq" }),
    user: Flags.string({ char: "u", required: true, description: "the user the reaction is made as (UUID)" }),
    reaction: Flags.string({ required: true, description: "the reaction_key: an emoji or a short name (1 to 64 bytes, no spaces)" }),
    remove: Flags.boolean({ default: false, description: "remove the user's reaction instead of adding it" }),
    reason: reasonFlag,
  };

  async run(): Promise<ReactCommandResult> {
    const group = uuid("--group", this.flags.group);
    const user = uuid("--user", this.flags.user);
    const seq = positiveSeq("--seq", this.flags.seq);
    const key = String(this.flags.reaction);
    const tenant = this.tenant();
    const { client } = await this.connect();
    const r = reactResult({
      ...(await client.react({ tenant, group, conversationSeq: BigInt(seq), user, reactionKey: key, remove: this.flags.remove, reason: this.flags.reason })),
      group, user, key, action: this.flags.remove ? "remove" : "add",
    });
    this.log(reactText(r));
    return r;
  }
}
