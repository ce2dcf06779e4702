import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { yesFlag, type Destructive } from "../../confirm.js";
import { epochBumpResult, type EpochBumpResult } from "../../projection/results.js";
import { bumpedText } from "../../projection/text.js";
import { LIMITS, reason as checkReason } from "../../validate.js";

export default class ProjectionBump extends ConnectedCommand<typeof ProjectionBump> {
  static override summary = "Bump the session projection epoch: every user's list is rebuilt from the authority on their next pull.";
  static override description = `Use it when the projection may have lost entries the server cannot know about (a Redis instance restored from an old snapshot, keys deleted by hand). Nothing is rebuilt at once: each user whose epoch mark is behind gets their conversation set merged back (ZADD GT) from the conversation-set authority on their next list pull, per user, never a full scan. The bump is recorded with --reason and your certificate's name (see \`projection epoch\`) and in the audit log.

Confirmation: on a terminal it asks first; --yes skips the question. When stdin is NOT a terminal there is never a prompt, and the bump needs --yes (else exit 2, nothing changed).

Needs the operator or admin role. Exit codes: 0 bumped (prints the new epoch); 2 --reason missing or longer than ${LIMITS.reasonChars} characters, or no --yes without a terminal; 5 server unreachable; 6 refused certificate or role; 130 not confirmed.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --reason \"restored redis-3 from the 02:00 snapshot\"",
    {
      description: "In a script (no terminal): --yes is required",
      command: "<%= config.bin %> <%= command.id %> --reason \"INC-4211: convs keys deleted by hand\" --yes --json",
    },
  ];
  static override flags = {
    reason: Flags.string({ char: "r", required: true, description: `why (1 to ${LIMITS.reasonChars} characters); recorded with the bump and in the audit log` }),
    yes: yesFlag,
  };
  static override destructive: Destructive = { action: "bump the epoch" };

  async run(): Promise<EpochBumpResult> {
    const reason = checkReason("--reason", this.flags.reason, true)!;
    // connect() checks every connection setting locally and sends nothing yet: a question answered
    // for a malformed endpoint or an unreadable key would help nobody
    const { client } = await this.connect();
    await this.askFirst("Bump the session projection epoch? Every user's conversation list is merged back from the authority on their next pull. [y/N] ");
    const out = epochBumpResult(await client.bumpEpoch({ reason }));
    this.log(bumpedText(out));
    return out;
  }
}
