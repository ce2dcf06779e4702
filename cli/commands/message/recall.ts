import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { yesFlag, type Destructive } from "../../confirm.js";
import { anchorResult, type AnchorCommandResult } from "../../message/results.js";
import { anchorText } from "../../message/text.js";
import { positiveSeq, reasonFlag } from "../../message/flags.js";
import { uuid } from "../../validate.js";

export default class MessageRecall extends ConnectedCommand<typeof MessageRecall> {
  static override summary = "Recall a message as a moderator: its content is gone for every member, with no time window.";
  static override description = `Spec 003 §2.3, in its fixed order: first a CONTROL event (qim.recall.v1) with its own conversation_seq goes into the log — every member gets it, online devices at once, the others when they sync — then the message's state becomes recalled and its payload is deleted. A crash between the two steps loses nothing: the relay finishes the second before it delivers the event. Unread goes down for members who had not read it (spec 002 §3.5); the conversation's position and preview stay at the message (shown as recalled).

Users recall their own messages from their devices within recall_self_window (2 min); this command is the moderation path: any message, any age, with --reason (1 to 500 characters, written to the audit log). Recalling a recalled message changes nothing (exit 0, duplicate).

Confirmation: on a terminal it asks first; --yes skips the question; without a terminal --yes is required (else exit 2, nothing changed).

Needs the operator or admin role; audited. Exit codes: 0 recalled (or already was); 2 bad flags, no --reason, or no --yes without a terminal; 3 no such group or message (or an event, which cannot be recalled); 4 the group was dissolved; 5 server unreachable; 6 refused certificate or role; 130 not confirmed.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --group 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --seq 42 --reason 'reported: personal data' --yes",
  ];
  static override flags = {
    group: Flags.string({ char: "g", required: true, description: "the group's UUID" }),
    seq: Flags.string({ char: "s", required: true, description: "the message's conversation_seq" }),
    reason: reasonFlag,
    yes: yesFlag,
  };
  static override destructive: Destructive = { action: "recall the message for every member" };

  async run(): Promise<AnchorCommandResult> {
    const group = uuid("--group", this.flags.group);
    const seq = positiveSeq("--seq", this.flags.seq);
    const tenant = this.tenant();
    const { client } = await this.connect();
    await this.askFirst(`Recall message ${seq} of group ${group} for every member? Its content is deleted. [y/N] `);
    const r = anchorResult({ ...(await client.recallMessage({ tenant, group, conversationSeq: BigInt(seq), reason: this.flags.reason })), group });
    this.log(anchorText(r, "recalled"));
    return r;
  }
}
