import { ConversationActionCommand, conversationFlags, ROLES_TEXT, type ConversationChangeResult } from "../../conversation/action.js";

export default class ConversationUnpin extends ConversationActionCommand<typeof ConversationUnpin> {
  static override summary = "Unpin a conversation in a user's list: back to the normal zone, by newest activity.";
  static override description = `A structural change (spec 002 §6.3): the user's snapshot gets a new revision, so a client paging the list starts again from page 1.

${ROLES_TEXT}`;
  static override examples = ["<%= config.bin %> <%= command.id %> --group 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --as 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b"];
  static override flags = { ...conversationFlags };
  protected readonly action = "unpin" as const;

  async run(): Promise<ConversationChangeResult> {
    return this.change();
  }
}
