import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { rebuildResult, type RebuildResult } from "../../projection/results.js";
import { rebuiltText } from "../../projection/text.js";
import { uuid } from "../../validate.js";

export default class ProjectionRebuild extends ConnectedCommand<typeof ProjectionRebuild> {
  static override summary = "Rebuild one user's conversation list from the conversation-set authority now.";
  static override description = `Merges the user's rows of the authority into their projected list (ZADD GT: nothing newer is overwritten) and raises their epoch mark to the current epoch. Without --force it does nothing when the user's mark is already current (rebuilt: false): their next list pull would not rebuild either. --force merges anyway, e.g. after repairing the authority.

The tenant comes from --tenant (or QIMCTL_TENANT, or the context file). Needs the operator or admin role; audited. Exit codes: 0 done (also "nothing to do"); 2 bad --tenant/--user; 5 server unreachable; 6 refused certificate or role.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --tenant 8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c --user 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b",
    "<%= config.bin %> <%= command.id %> --user 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b --force --json",
  ];
  static override flags = {
    user: Flags.string({ char: "u", required: true, description: "the user's UUID" }),
    force: Flags.boolean({ description: "merge even when the user's epoch mark is current" }),
  };

  async run(): Promise<RebuildResult> {
    const user = uuid("--user", this.flags.user);
    const tenant = this.tenant();
    const { client } = await this.connect();
    const out = rebuildResult({ ...(await client.rebuildUser({ tenant, user, force: this.flags.force })), tenant, user });
    this.log(rebuiltText(out));
    return out;
  }
}
