import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { retentionShowResult, type RetentionShowResult } from "../../retention/results.js";
import { showText } from "../../retention/text.js";
import { uuid } from "../../validate.js";

export default class RetentionShow extends ConnectedCommand<typeof RetentionShow> {
  static override summary = "Show the tenant's retention policy, and with --group which rule trims that group.";
  static override description = `A policy names rules per retention class (a maximum age and/or a maximum count of seqs kept; 0 turns a limit off) and the default class of every conversation without a setting of its own. A group may pick another class or carry a rule of its own, which wins. A tenant without a policy is never trimmed. CMD channels follow the same rules (a group's CMD channel its group's; any other the default class). docs/retention.md.

Any role. Exit codes: 0 shown; 2 bad --group; 3 no such group; 5 server unreachable; 6 refused certificate.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %>",
    "<%= config.bin %> <%= command.id %> --group 8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c --output json",
  ];
  static override flags = {
    group: Flags.string({ char: "g", description: "also this group's own setting and the rule that applies to it (UUID)" }),
  };

  async run(): Promise<RetentionShowResult> {
    const group = this.flags.group === undefined ? "" : uuid("--group", this.flags.group);
    const tenant = this.tenant();
    const { client } = await this.connect();
    const out = retentionShowResult(await client.getRetention({ tenant, group }));
    this.log(showText(out));
    return out;
  }
}
