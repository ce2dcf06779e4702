import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../base.js";
import { historyResult, type HistoryResult } from "../history/results.js";
import { historyText } from "../history/text.js";
import { LIMITS, u64Flag, uuid } from "../validate.js";

export default class History extends ConnectedCommand<typeof History> {
  static override summary = "Read a group's history as one of its users sees it.";
  static override description = `Returns only the records inside the user's visible interval (joined_at, left_at) (ADR-0021 §3): a user who joined later sees the join event first (earliestAvailableConversationSeq = joined_at + 1); a user who left or was removed sees nothing from left_at on; a user who rejoined sees only the new interval. Someone who was never a member is refused (exit 6, PERMISSION_DENIED).

Pages: records with conversation_seq > --after, at most --limit of them; when a page is full, the next --after is printed on stderr.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --group 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --as 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b",
    {
      description: "The next page of 50, as JSON",
      command: "<%= config.bin %> <%= command.id %> -g 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --as 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b --after 100 --limit 50 --json",
    },
  ];
  static override flags = {
    group: Flags.string({ char: "g", required: true, description: "the group's UUID" }),
    as: Flags.string({ required: true, description: "read as this user (UUID)" }),
    after: u64Flag("a conversation_seq", 0n)({ description: "only records with conversation_seq greater than this, 0 to 2^64-1 (default 0)" }),
    limit: Flags.integer({ min: 1, max: LIMITS.historyPage, default: 100, description: `records per page, 1 to ${LIMITS.historyPage}` }),
  };

  async run(): Promise<HistoryResult> {
    const group = uuid("--group", this.flags.group);
    const user = uuid("--as", this.flags.as);
    const { after = 0n, limit } = this.flags;
    const tenant = this.tenant();
    const { client } = await this.connect();
    const h = historyResult({ ...(await client.readHistory({ tenant, group, user, after, limit })), group, user });
    this.log(historyText(h));
    if (h.records.length === limit) this.note(`(page full: continue with --after ${h.records.at(-1)!.conversationSeq})`);
    return h;
  }
}
