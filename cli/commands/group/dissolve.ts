import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { yesFlag, type Destructive } from "../../confirm.js";
import { dissolutionResult, type DissolutionResult } from "../../group/results.js";
import { dissolutionText } from "../../group/text.js";
import { memberVersionFlag } from "../../membership/change.js";
import { uuid } from "../../validate.js";

export default class GroupDissolve extends ConnectedCommand<typeof GroupDissolve> {
  static override summary = "Dissolve a group: one last event to its members, then nothing more can be sent to it.";
  static override description = `Commits one CONTROL message (custom type qim.group.v1, op dissolve) at a conversation_seq J, sent as the owner and delivered to the group's members like a group message, and marks the group DISSOLVED (group show: state, dissolvedAt J). Members keep the conversation and read its history up to and including J (the dissolve event is its last record; control messages count no unread); nothing comes after it: every later message send, membership add/remove/leave, transfer-owner and CMD to the group is refused with exit 4 ("group G was dissolved at conversation_seq J"). Members who left before keep their own earlier bound. membership list still shows everyone. It costs the same for a group of 3 or of 1,000,000 members: no member entry is read or rewritten.

A re-run after the dissolve took effect changes nothing, says so and exits 0 (no second event), even with the --expect-version of the first run. --dry-run prints the plan (owner, member count, version) and writes nothing; --expect-version V refuses (exit 4) unless the group is at member version V. Exits 3 when the group does not exist. Needs the operator or admin role; the audit log records it.

Confirmation: on a terminal it shows the plan and asks first, then dissolves pinned to the planned member version (a change in between exits 4); --yes skips the question. When stdin is NOT a terminal there is never a prompt, and dissolve needs --yes (else exit 2, nothing changed). --dry-run never needs --yes.`;
  static override examples = [
    {
      description: "See what would happen first",
      command: "<%= config.bin %> <%= command.id %> --group 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --dry-run",
    },
    {
      description: "In a script: compare-and-set against version 4, JSON result",
      command: "<%= config.bin %> <%= command.id %> -g 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --expect-version 4 --yes --json",
    },
  ];
  static override flags = {
    group: Flags.string({ char: "g", required: true, description: "the group's UUID" }),
    "dry-run": Flags.boolean({ description: "print the plan (owner, member count, version) and change nothing" }),
    "expect-version": memberVersionFlag({ description: "compare-and-set: refuse (exit 4) unless the group is at this member version" }),
    yes: yesFlag,
  };
  static override destructive: Destructive = { action: "dissolve the group", exceptWith: "dry-run" };

  async run(): Promise<DissolutionResult> {
    const group = uuid("--group", this.flags.group);
    const expectVersion = this.flags["expect-version"];
    const tenant = this.tenant();
    const { client } = await this.connect();
    let pinned = expectVersion;
    // on a terminal: show the server's plan, ask, then dissolve pinned to the planned version (a
    // change in between exits 4 instead of dissolving a group other than the one shown)
    await this.askFirst(async () => {
      const plan = dissolutionResult({ ...(await client.dissolveGroup({ tenant, group, dryRun: true, ...(pinned !== undefined ? { expectVersion: pinned } : {}) })), tenant, group });
      if (plan.outcome !== "planned") return undefined;
      pinned = BigInt(plan.version);
      return `${dissolutionText(plan)}\nDissolve group ${group}? [y/N] `;
    });
    const d = dissolutionResult({
      ...(await client.dissolveGroup({ tenant, group, dryRun: this.flags["dry-run"], ...(pinned !== undefined ? { expectVersion: pinned } : {}) })), tenant, group,
    });
    this.log(dissolutionText(d));
    return d;
  }
}
