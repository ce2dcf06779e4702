import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { epochResult, type EpochResult } from "../../projection/results.js";
import { epochText } from "../../projection/text.js";
import { LIMITS } from "../../validate.js";

export default class ProjectionEpoch extends ConnectedCommand<typeof ProjectionEpoch> {
  static override summary = "Show the session projection epoch and its recent bumps (reason, who, when).";
  static override description = `The epoch (session_projection:epoch) says when the projection may have lost entries: each bump makes every user's conversation list merge back from the conversation-set authority on their next pull, per user, lazily. It is bumped by \`projection bump\`, by \`drill rebuild\`, and by the server itself ("by": "projection") when its start-up audit finds records that left the dispatch log's retention window before they were projected.

Any role. Exit codes: 0 shown; 2 bad --limit; 5 server unreachable; 6 refused certificate.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %>",
    "<%= config.bin %> <%= command.id %> --limit 50 --json | jq '.bumps[] | select(.by != \"projection\")'",
  ];
  static override flags = {
    limit: Flags.integer({ char: "n", min: 1, max: LIMITS.epochBumps, default: 10, description: `how many of the newest bumps, 1 to ${LIMITS.epochBumps}` }),
  };

  async run(): Promise<EpochResult> {
    const { limit } = this.flags;
    const { client } = await this.connect();
    const out = epochResult(await client.getEpoch({ limit }));
    this.log(epochText(out));
    return out;
  }
}
