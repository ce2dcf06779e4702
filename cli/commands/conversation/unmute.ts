import { ConversationActionCommand, conversationFlags, ROLES_TEXT, type ConversationChangeResult } from "../../conversation/action.js";

export default class ConversationUnmute extends ConversationActionCommand<typeof ConversationUnmute> {
  static override summary = "Unmute a conversation for a user: its unread counts in total_unread again.";
  static override description = `The reverse of conversation mute (spec 002 §4).

${ROLES_TEXT}`;
  static override examples = ["<%= config.bin %> <%= command.id %> --group 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --as 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b"];
  static override flags = { ...conversationFlags };
  protected readonly action = "unmute" as const;

  async run(): Promise<ConversationChangeResult> {
    return this.change();
  }
}
