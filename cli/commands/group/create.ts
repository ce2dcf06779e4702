import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { groupResult, type GroupResult } from "../../group/results.js";
import { createdText } from "../../group/text.js";
import { LIMITS, optionalUuidList, uuid } from "../../validate.js";

export default class GroupCreate extends ConnectedCommand<typeof GroupCreate> {
  static override summary = "Create a group with an owner and initial members.";
  static override description = `The owner and the initial members join with joined_at = 0 (they can read the whole history) and no control message is written; the group starts at member version 1. Without --group a new UUID is chosen and printed. Needs the operator or admin role.`;
  static override examples = [
    {
      description: "A group of three; the new group id is printed",
      command: "<%= config.bin %> <%= command.id %> --owner 1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f --member 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b --member 9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d",
    },
    "<%= config.bin %> <%= command.id %> --owner 1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f --group 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --json",
  ];
  static override flags = {
    owner: Flags.string({ required: true, description: "the owner's user UUID (also recorded as the sender of admin membership events)" }),
    member: Flags.string({ char: "m", multiple: true, delimiter: ",", description: `initial member UUID besides the owner; repeat or separate with commas (at most ${LIMITS.initialMembers})` }),
    group: Flags.string({ char: "g", description: "the new group's UUID (default: a new random one)" }),
  };

  async run(): Promise<GroupResult> {
    const owner = uuid("--owner", this.flags.owner);
    const members = optionalUuidList("--member", this.flags.member, LIMITS.initialMembers);
    const group = this.flags.group === undefined ? "" : uuid("--group", this.flags.group);
    const tenant = this.tenant();
    const { client } = await this.connect();
    const g = groupResult(await client.createGroup({ tenant, group, owner, members }));
    this.log(createdText(g));
    return g;
  }
}
