import { Flags } from "@oclif/core";
import { ConnectedCommand } from "../base.js";
import { table } from "../format.js";
import { summaryResult, type SessionsResult } from "../results.js";
import { LIMITS, uuid, uuidList } from "../validate.js";

export default class Sessions extends ConnectedCommand<typeof Sessions> {
  static override summary = "Show a user's conversation summaries: head and definitional unread per group.";
  static override description = `For each group named: the user's state and interval, read position, the latest record the user may see (the head, clipped at left_at - 1 for a user who left) and the definitional unread count (spec 002 §3.1: normal messages after max(read_seq, joined_at), never control messages). unreadExact is false when the count was capped at 200.

Name the groups with --group: listing every conversation of a user needs the session projection, which the server does not run yet.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --user 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b --group 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39",
    "<%= config.bin %> <%= command.id %> -u 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b -g 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39,7e6d5c4b-3a29-4180-9f7e-6d5c4b3a2918 --json",
  ];
  static override flags = {
    user: Flags.string({ char: "u", required: true, description: "the user's UUID" }),
    group: Flags.string({ char: "g", required: true, multiple: true, delimiter: ",", description: `group UUID; repeat or separate with commas (at most ${LIMITS.summaryGroups})` }),
  };

  async run(): Promise<SessionsResult> {
    const user = uuid("--user", this.flags.user);
    const groups = uuidList("--group", this.flags.group, LIMITS.summaryGroups);
    const tenant = this.tenant();
    const { client } = await this.connect();
    const r = await client.listConversationSummaries({ tenant, user, groups });
    const out: SessionsResult = { user, summaries: r.summaries.map(summaryResult) };
    this.log(table(
      ["GROUP", "STATE", "JOINED_AT", "LEFT_AT", "READ_SEQ", "HEAD_SEQ", "UNREAD"],
      out.summaries.map((s) => [s.group, s.state, s.joinedAt, s.leftAt, s.readConversationSeq, s.head?.conversationSeq ?? null, s.unreadExact ? s.unread : `${s.unread}+`]),
    ));
    return out;
  }
}
