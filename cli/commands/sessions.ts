import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../base.js";
import { sessionsResult, type SessionsResult } from "../sessions/results.js";
import { sessionsText } from "../sessions/text.js";
import { LIMITS, optionalUuidList, uuid } from "../validate.js";

export default class Sessions extends ConnectedCommand<typeof Sessions> {
  static override summary = "Show a user's conversations: head and definitional unread per conversation.";
  static override description = `Without --group: the user's conversation list from the session projection, newest activity first (spec 002 §2.2), --limit per page (default 50, at most 200). When the user's epoch mark is behind the projection epoch (after \`projection bump\`, a drill, or a start-up that found lost records), the list is first merged back from the conversation-set authority: rebuilt is then true. total is how many conversations the projection holds for the user.

With --group: only the groups named (at most ${LIMITS.summaryGroups}), read directly from the groups, without the projection; epoch, rebuilt, total and hidden are null.

For each conversation: the user's state and interval, read position, the latest record the user may see (the head, clipped at left_at - 1 for a user who left) and the definitional unread count (spec 002 §3.1: normal messages after max(read_seq, joined_at), never control messages). unreadExact is false when the count was capped at 200.

Any role. Exit codes: 0 listed (also an empty list); 2 bad --user/--group/--limit; 5 server unreachable; 6 refused certificate.`;
  static override examples = [
    {
      description: "The user's conversation list from the session projection",
      command: "<%= config.bin %> <%= command.id %> --user 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b",
    },
    "<%= config.bin %> <%= command.id %> --user 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b --group 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39",
    "<%= config.bin %> <%= command.id %> -u 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b -g 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39,7e6d5c4b-3a29-4180-9f7e-6d5c4b3a2918 --json",
  ];
  static override flags = {
    user: Flags.string({ char: "u", required: true, description: "the user's UUID" }),
    group: Flags.string({ char: "g", multiple: true, delimiter: ",", description: `group UUID; repeat or separate with commas (at most ${LIMITS.summaryGroups}); without it, the user's list from the session projection` }),
    limit: Flags.integer({ char: "n", min: 1, max: LIMITS.sessionPage, exclusive: ["group"], description: `conversations per page from the projection, 1 to ${LIMITS.sessionPage} (default 50; not with --group)` }),
  };

  async run(): Promise<SessionsResult> {
    const user = uuid("--user", this.flags.user);
    const groups = optionalUuidList("--group", this.flags.group, LIMITS.summaryGroups);
    const tenant = this.tenant();
    const { client } = await this.connect();
    const r = await client.listConversationSummaries({ tenant, user, groups, limit: groups.length === 0 ? this.flags.limit ?? 0 : 0 });
    const out = sessionsResult(user, r);
    this.log(sessionsText(out));
    return out;
  }
}
