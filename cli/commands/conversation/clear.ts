import { ConversationActionCommand, conversationFlags, ROLES_TEXT, type ConversationChangeResult } from "../../conversation/action.js";

export default class ConversationClear extends ConversationActionCommand<typeof ConversationClear> {
  static override summary = "Clear a conversation's history for a user: it stays in their list, with nothing shown and no unread up to now.";
  static override description = `Writes hidden_before_conversation_seq = the head (spec 002 §7): the conversation stays in the list; its content and unread up to now are hidden for this user only. A later message shows and counts as usual. Other members see nothing change.

${ROLES_TEXT}`;
  static override examples = ["<%= config.bin %> <%= command.id %> --group 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --as 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b"];
  static override flags = { ...conversationFlags };
  protected readonly action = "clear" as const;

  async run(): Promise<ConversationChangeResult> {
    return this.change();
  }
}
