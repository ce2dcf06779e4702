import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { badgeReconcileResult, type BadgeReconcileResult } from "../../badge/results.js";
import { badgeReconcileText } from "../../badge/text.js";
import { uuid } from "../../validate.js";

export default class BadgeReconcile extends ConnectedCommand<typeof BadgeReconcile> {
  static override summary = "Recompute a user's rows from the definition and their badge from the rows, and print the drift found.";
  static override description = `Every conversation row of the user is recomputed from the history (the definitional unread and mentions of spec 002 §3.1, bounded at 200), then the badge is summed again from the rows (§4: a full recount after each reconcile corrects accumulated drift). Safe to repeat: a second run finds no drift. Audited.

Needs the operator or admin role. Exit codes: 0 reconciled (whatever the drift); 2 bad --user; 5 server unreachable; 6 refused certificate or role.`;
  static override examples = ["<%= config.bin %> <%= command.id %> --user 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b", "<%= config.bin %> <%= command.id %> -u 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b --json | jq .driftedRows"];
  static override flags = {
    user: Flags.string({ char: "u", required: true, description: "the user's UUID" }),
  };

  async run(): Promise<BadgeReconcileResult> {
    const user = uuid("--user", this.flags.user);
    const tenant = this.tenant();
    const { client } = await this.connect();
    const out = badgeReconcileResult({ ...(await client.reconcileBadge({ tenant, user })), user });
    this.log(badgeReconcileText(out));
    return out;
  }
}
