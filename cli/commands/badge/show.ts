import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { badgeShowResult, type BadgeShowResult } from "../../badge/results.js";
import { badgeShowText } from "../../badge/text.js";
import { uuid } from "../../validate.js";

export default class BadgeShow extends ConnectedCommand<typeof BadgeShow> {
  static override summary = "Show a user's badge: total unread, total mentions, muted unread.";
  static override description = `The badge as the engine keeps it (spec 002 §4), updated in the same atomic step as the rows: totalUnread ("total unread" in the table) over the user's ACTIVE, not archived, not muted conversations; totalMention over ACTIVE ones (muted included: muting only silences notifications); mutedUnread over muted ones. version is the user's projection version it was written at.

Any role. Exit codes: 0 shown; 2 bad --user; 5 server unreachable; 6 refused certificate.`;
  static override examples = ["<%= config.bin %> <%= command.id %> --user 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b", "<%= config.bin %> <%= command.id %> -u 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b --json"];
  static override flags = {
    user: Flags.string({ char: "u", required: true, description: "the user's UUID" }),
  };

  async run(): Promise<BadgeShowResult> {
    const user = uuid("--user", this.flags.user);
    const tenant = this.tenant();
    const { client } = await this.connect();
    const out = badgeShowResult({ ...(await client.getBadge({ tenant, user })), user });
    this.log(badgeShowText(out));
    return out;
  }
}
