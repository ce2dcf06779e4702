import { ConversationActionCommand, conversationFlags, ROLES_TEXT, type ConversationChangeResult } from "../../conversation/action.js";

export default class ConversationMute extends ConversationActionCommand<typeof ConversationMute> {
  static override summary = "Mute a conversation for a user: its unread leaves total_unread and counts in muted_unread; mentions still count.";
  static override description = `Muting only silences notifications (spec 002 §4): the conversation keeps its place and its unread; the badge moves its unread from total_unread to muted_unread.

${ROLES_TEXT}`;
  static override examples = ["<%= config.bin %> <%= command.id %> --group 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --as 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b"];
  static override flags = { ...conversationFlags };
  protected readonly action = "mute" as const;

  async run(): Promise<ConversationChangeResult> {
    return this.change();
  }
}
