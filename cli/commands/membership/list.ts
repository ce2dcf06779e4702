import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { memberListResult, type MemberListResult } from "../../membership/results.js";
import { memberListText } from "../../membership/text.js";
import { uuid } from "../../validate.js";

export default class MembershipList extends ConnectedCommand<typeof MembershipList> {
  static override summary = "List everyone who ever was a member of a group, with intervals and states.";
  static override description = `Prints one row per user: state (ACTIVE, LEFT or REMOVED) and the visible interval (joined_at, left_at) in conversation_seq terms: the user sees records with joined_at < seq < left_at. Initial members have joined_at 0; left_at is "-" while the user is a member. The member version printed first is what --expect-version compares against.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --group 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39",
    "<%= config.bin %> <%= command.id %> -g 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --json | jq '.members[] | select(.state == \"ACTIVE\") | .userId'",
  ];
  static override flags = {
    group: Flags.string({ char: "g", required: true, description: "the group's UUID" }),
  };

  async run(): Promise<MemberListResult> {
    const group = uuid("--group", this.flags.group);
    const tenant = this.tenant();
    const { client } = await this.connect();
    const r = memberListResult(group, await client.listMembers({ tenant, group }));
    this.log(memberListText(r));
    return r;
  }
}
