import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { userGroupResult, type UserGroupResult, type UserGroupsResult } from "../../user/results.js";
import { userGroupsText } from "../../user/text.js";
import { uuid } from "../../validate.js";

export default class UserGroups extends ConnectedCommand<typeof UserGroups> {
  static override summary = "List the groups a user is or was in, with state and visible interval.";
  static override description = `One row per group: state (ACTIVE, LEFT or REMOVED) and the visible interval (joined_at, left_at) in that group's conversation_seq terms — the user sees records with joined_at < seq < left_at; left_at is "-" while the user is a member. Rows are by group id; each group's seqs are its own.

The server (ListUserGroups) takes the user's conversations from the session projection and the conversation-set authority together, and reads each from its group's member table, so the state and interval are those membership list shows. It writes nothing (no rebuild). Not listed yet: a group the user was put in when it was created and that has had no message since (creation writes no control message, so nothing reached the user's projection); it appears with the group's first message. A join reaches the projection a moment after membership add returns (the dispatch log and the projection run asynchronously).

Needs any role. Exit codes: 0 ok (also when the user is in no group); 2 bad --user or --tenant.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --user 9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d",
    {
      description: "The groups the user is still a member of",
      command: "<%= config.bin %> <%= command.id %> -u 9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d --json | jq -r '.groups[] | select(.state == \"ACTIVE\") | .group'",
    },
  ];
  static override flags = {
    user: Flags.string({ char: "u", required: true, description: "the user's UUID" }),
  };

  async run(): Promise<UserGroupsResult> {
    const user = uuid("--user", this.flags.user);
    const tenant = this.tenant();
    const { client } = await this.connect();
    const groups: UserGroupResult[] = [];
    let conversations = 0;
    // every page: a user's groups are bounded (the projection holds each conversation once)
    for (let after = ""; ;) {
      const page = await client.listUserGroups({ tenant, user, after, limit: 0 });
      groups.push(...page.groups.map(userGroupResult));
      conversations = page.conversations;
      if (page.nextAfter === "") break;
      after = page.nextAfter;
    }
    const r: UserGroupsResult = { tenant, user, groups, conversations };
    this.log(userGroupsText(r));
    return r;
  }
}
