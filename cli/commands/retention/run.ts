import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { retentionRunResult, type RetentionRunResult } from "../../retention/results.js";
import { runText } from "../../retention/text.js";

export default class RetentionRun extends ConnectedCommand<typeof RetentionRun> {
  static override summary = "Run a retention round for the tenant now (--dry-run: only show what would be removed).";
  static override description = `The server's trimming task runs rounds by itself (retention.interval); this runs one now, over the relay buckets the answering node owns (in a cluster every node trims its own buckets: run it against each, or wait for their rounds). Each conversation and CMD channel gets a bounded number of steps; what is left is reported as behind and done by the next rounds.

--dry-run writes nothing and shows, per conversation and channel, what its first step would remove. At most --limit (1 to 1000, default 100) conversations and channels are listed; "truncated" says more had something to trim (a dry run stops walking once its list is full, so its counts then cover part of the buckets). Rounds never overlap: one asked for while another runs waits for it.

Needs the operator or admin role; audited, a dry run too. Exit codes: 0 done; 2 bad --limit; 5 server unreachable; 6 refused certificate or role.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --dry-run",
    "<%= config.bin %> <%= command.id %>",
    "<%= config.bin %> <%= command.id %> --dry-run --limit 1000 --output json",
  ];
  static override flags = {
    "dry-run": Flags.boolean({ description: "write nothing; show what would be removed" }),
    limit: Flags.integer({ char: "n", min: 1, max: 1000, description: "conversations and channels listed at most, 1 to 1000 (default 100)" }),
  };

  async run(): Promise<RetentionRunResult> {
    const tenant = this.tenant();
    const { client } = await this.connect();
    const out = retentionRunResult({ ...(await client.runRetention({ tenant, dryRun: this.flags["dry-run"], limit: this.flags.limit ?? 0 })), tenant });
    this.log(runText(out));
    return out;
  }
}
