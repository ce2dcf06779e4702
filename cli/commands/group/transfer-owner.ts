import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { ownerTransferResult, type OwnerTransferResult } from "../../group/results.js";
import { ownerTransferText } from "../../group/text.js";
import { memberVersionFlag } from "../../membership/change.js";
import { uuid } from "../../validate.js";

export default class GroupTransferOwner extends ConnectedCommand<typeof GroupTransferOwner> {
  static override summary = "Hand a group to another current member (the owner membership remove refuses).";
  static override description = `The new owner must be a current member of the group (else exit 4, nothing changed; add them first with membership add). The transfer moves the member version by one, like a membership event, but records no CONTROL message: the member set, the intervals and who sees what do not change. The new owner becomes the recorded sender of later admin membership events, and the old owner can then be removed. The audit log records the transfer.

A re-run after the transfer took effect (the user already owns the group) changes nothing, says so and exits 0, even with the --expect-version of the first run. --dry-run prints the plan and writes nothing; --expect-version V refuses the transfer (exit 4) unless the group is at member version V. Exits 3 when the group does not exist. Needs the operator or admin role.`;
  static override examples = [
    {
      description: "Transfer, then remove the former owner",
      command: "<%= config.bin %> <%= command.id %> --group 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --to 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b",
    },
    {
      description: "Compare-and-set against version 4, JSON result",
      command: "<%= config.bin %> <%= command.id %> -g 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --to 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b --expect-version 4 --json",
    },
    "<%= config.bin %> <%= command.id %> -g 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --to 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b --dry-run",
  ];
  static override flags = {
    group: Flags.string({ char: "g", required: true, description: "the group's UUID" }),
    to: Flags.string({ required: true, description: "the new owner's user UUID (a current member)" }),
    "dry-run": Flags.boolean({ description: "print the plan (current and new owner, version) and change nothing" }),
    "expect-version": memberVersionFlag({ description: "compare-and-set: refuse (exit 4) unless the group is at this member version" }),
  };

  async run(): Promise<OwnerTransferResult> {
    const group = uuid("--group", this.flags.group);
    const to = uuid("--to", this.flags.to);
    const expectVersion = this.flags["expect-version"];
    const tenant = this.tenant();
    const { client } = await this.connect();
    const t = ownerTransferResult({
      ...(await client.transferOwner({ tenant, group, to, dryRun: this.flags["dry-run"], ...(expectVersion !== undefined ? { expectVersion } : {}) })), tenant, group,
    });
    this.log(ownerTransferText(t));
    return t;
  }
}
