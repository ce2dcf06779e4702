import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { sendResult, type SendResult } from "../../message/results.js";
import { sentText } from "../../message/text.js";
import { LIMITS, optionalUuidList, text, uuid } from "../../validate.js";

export default class MessageSend extends ConnectedCommand<typeof MessageSend> {
  static override summary = "Send a text message to a group as one of its members.";
  static override description = `The message goes through the engine's commit path: the audience is frozen at the current member version and the sender must be a member at that version. --client-message-id (a UUID) makes the send idempotent: a retry with the same id and the same message (sender, text, mentions) returns the existing commit (printed as a duplicate, exit 0) instead of a second message; the same id with a different message is refused (IDEMPOTENCY_CONFLICT, exit 4).

Needs the drill or admin role (drills, demos, smoke tests).`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --group 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --as 1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f --text 'hello'",
    {
      description: "Idempotent: running this twice commits one message",
      command: "<%= config.bin %> <%= command.id %> -g 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --as 1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f --text 'deploy done' --client-message-id 3e1f0a2b-4c5d-4e6f-8a7b-9c0d1e2f3a4b",
    },
  ];
  static override flags = {
    group: Flags.string({ char: "g", required: true, description: "the group's UUID" }),
    as: Flags.string({ required: true, description: "the sender's user UUID (must be a member)" }),
    text: Flags.string({ char: "t", required: true, description: `the message text (at most ${LIMITS.messageBytes} bytes of UTF-8)` }),
    "client-message-id": Flags.string({ description: "idempotency key (a UUID): a retry with the same id returns the existing commit" }),
    mention: Flags.string({ multiple: true, delimiter: ",", description: `a user the message mentions (a UUID); repeat or separate with commas (at most ${LIMITS.mentions} distinct): counts in their mention_count` }),
  };

  async run(): Promise<SendResult> {
    const group = uuid("--group", this.flags.group);
    const sender = uuid("--as", this.flags.as);
    const body = text("--text", this.flags.text, LIMITS.messageBytes);
    const clientMessageId = this.flags["client-message-id"] === undefined ? "" : uuid("--client-message-id", this.flags["client-message-id"]);
    const mentions = optionalUuidList("--mention", this.flags.mention, LIMITS.mentions);
    const tenant = this.tenant();
    const { client } = await this.connect();
    const r = sendResult({ ...(await client.sendMessage({ tenant, group, sender, text: body, clientMessageId, mentions })), group, sender });
    this.log(sentText(r, clientMessageId));
    return r;
  }
}
