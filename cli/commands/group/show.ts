import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { groupResult, type GroupResult } from "../../group/results.js";
import { groupText } from "../../group/text.js";
import { uuid } from "../../validate.js";

export default class GroupShow extends ConnectedCommand<typeof GroupShow> {
  static override summary = "Show a group: owner, member version, member count, latest conversation_seq, state.";
  static override description = `The member version starts at 1 and grows by one per membership event; it is what --expect-version of membership add/remove compares against. conversationSeq is the latest sequence allocated in the group's conversation (messages and membership events share it). state is ACTIVE, or DISSOLVED after group dissolve, with dissolvedAt the dissolve event's conversation_seq (null while ACTIVE). Exits 3 when the group does not exist.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --group 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39",
    "<%= config.bin %> <%= command.id %> -g 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --json | jq .version",
  ];
  static override flags = {
    group: Flags.string({ char: "g", required: true, description: "the group's UUID" }),
  };

  async run(): Promise<GroupResult> {
    const group = uuid("--group", this.flags.group);
    const tenant = this.tenant();
    const { client } = await this.connect();
    const g = groupResult(await client.getGroup({ tenant, group }));
    this.log(groupText(g));
    return g;
  }
}
