import * as Flags from "@oclif/core/flags";
import { ConversationActionCommand, conversationFlags, ROLES_TEXT, type ConversationChangeResult } from "../../conversation/action.js";

export default class ConversationPin extends ConversationActionCommand<typeof ConversationPin> {
  static override summary = "Pin a conversation in a user's list: it moves to the pinned zone, ordered by --rank.";
  static override description = `The pinned zone comes first, by pin rank (lower first), then newest activity (spec 002 §6.1). A structural change (§6.3): the user's snapshot gets a new revision, so a client paging the list starts again from page 1. Pinning again with another --rank moves it.

${ROLES_TEXT}`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --group 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --as 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b",
    "<%= config.bin %> <%= command.id %> -g 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --as 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b --rank 0 --json",
  ];
  static override flags = {
    ...conversationFlags,
    rank: Flags.integer({ char: "r", min: 0, max: 4_294_967_295, description: "the pin rank, lower first (default: the engine's, after the pinned ones)" }),
  };
  protected readonly action = "pin" as const;

  async run(): Promise<ConversationChangeResult> {
    return this.change(this.flags.rank !== undefined ? { pinRank: this.flags.rank } : {});
  }
}
