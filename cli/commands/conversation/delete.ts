import { yesFlag, type Destructive } from "../../confirm.js";
import { ConversationActionCommand, conversationFlags, ROLES_TEXT, type ConversationChangeResult } from "../../conversation/action.js";

export default class ConversationDelete extends ConversationActionCommand<typeof ConversationDelete> {
  static override summary = "Delete a conversation from a user's list: it leaves the list until a new message arrives, showing only what follows.";
  static override description = `Writes deleted_before_conversation_seq = the head (spec 002 §7): the conversation leaves the user's list, and comes back with the next message, which is all it then shows. Not the same as clear (which keeps it in the list); a rebuild keeps the two apart. A structural change (§6.3): the snapshot gets a new revision. Only this user's list changes.

Confirmation: on a terminal it asks first; --yes skips the question. When stdin is NOT a terminal there is never a prompt, and delete needs --yes (else exit 2, nothing changed).

${ROLES_TEXT} 130 not confirmed.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --group 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --as 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b",
    { description: "In a script (no terminal): --yes is required", command: "<%= config.bin %> <%= command.id %> -g 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --as 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b --yes --json" },
  ];
  static override flags = { ...conversationFlags, yes: yesFlag };
  static override destructive: Destructive = { action: "delete the conversation from the user's list" };
  protected readonly action = "delete" as const;

  async run(): Promise<ConversationChangeResult> {
    return this.change({ question: `Delete conversation ${this.flags.group} from the list of user ${this.flags.as}? It comes back with the next message. [y/N] ` });
  }
}
