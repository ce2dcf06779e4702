import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { anchorResult, type AnchorCommandResult } from "../../message/results.js";
import { anchorText } from "../../message/text.js";
import { positiveSeq, reasonFlag } from "../../message/flags.js";
import { LIMITS, text, uuid } from "../../validate.js";

export default class MessageEdit extends ConnectedCommand<typeof MessageEdit> {
  static override summary = "Edit a message's text as a moderator (no time window).";
  static override description = `Spec 003 §2.3: a CONTROL event (qim.edit.v1) carrying the new text goes into the log first — every member gets it, online devices at once — then the message's state becomes edited and its payload the new text. Unread and the conversation's order do not change. Users edit their own messages from their devices within edit_self_window (15 min); this is the moderation path, with --reason (audited). A recalled message cannot be edited (exit 4). --client-message-id makes it idempotent: a retry with the same id and text answers the first event.

Needs the operator or admin role; audited. Exit codes: 0 edited (or a retry of the same edit); 2 bad flags or no --reason; 3 no such group or message; 4 the message was recalled, the group dissolved, or the id was used for another edit; 5 server unreachable; 6 refused certificate or role.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --group 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --seq 42 --text '[link removed]' --reason 'phishing link'",
  ];
  static override flags = {
    group: Flags.string({ char: "g", required: true, description: "the group's UUID" }),
    seq: Flags.string({ char: "s", required: true, description: "the message's conversation_seq" }),
    text: Flags.string({ char: "t", required: true, description: `the new text (at most ${LIMITS.messageBytes} bytes of UTF-8)` }),
    reason: reasonFlag,
    "client-message-id": Flags.string({ description: "idempotency key (a UUID): a retry with the same id and text answers the first event" }),
  };

  async run(): Promise<AnchorCommandResult> {
    const group = uuid("--group", this.flags.group);
    const seq = positiveSeq("--seq", this.flags.seq);
    const body = text("--text", this.flags.text, LIMITS.messageBytes);
    const clientMessageId = this.flags["client-message-id"] === undefined ? "" : uuid("--client-message-id", this.flags["client-message-id"]);
    const tenant = this.tenant();
    const { client } = await this.connect();
    const r = anchorResult({ ...(await client.editMessage({ tenant, group, conversationSeq: BigInt(seq), text: body, reason: this.flags.reason, clientMessageId })), group });
    this.log(anchorText(r, "edited"));
    return r;
  }
}
