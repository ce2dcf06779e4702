import { ConnectedCommand } from "../../base.js";
import { projectionStatusResult, type ProjectionStatusResult } from "../../projection/results.js";
import { statusText } from "../../projection/text.js";

export default class ProjectionStatus extends ConnectedCommand<typeof ProjectionStatus> {
  static override summary = "Show the session projection: per partition verdict, checkpoint, watermarks and lag; pending registrations; authority; epoch.";
  static override description = `Per dispatch-log partition: the verdict of the consumer's audit (OK, NO_CHECKPOINT, OVER_WINDOW, BEYOND_HIGH, IDENTITY_MISMATCH; see \`dispatch audit\`), the checkpoint (the next offset the consumer reads), the low and high watermarks (records dropped by retention so far, records ever appended) and the lag (high - checkpoint). Then the depth of the pending-registration queue per Redis instance (conversations that entered a user's set and are not yet written to the authority), the authority in use, the epoch and the dispatch-log retention.

Lag 0 everywhere and no pending registrations mean the projection has caught up with every commit relayed so far.

Any role. Exit codes: 0 shown (whatever the verdicts: \`dispatch audit\` is the check that fails); 5 server unreachable; 6 refused certificate.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %>",
    "<%= config.bin %> <%= command.id %> --json | jq '[.partitions[].lag] | add'",
  ];

  async run(): Promise<ProjectionStatusResult> {
    const { client } = await this.connect();
    const out = projectionStatusResult(await client.getProjectionStatus({}));
    this.log(statusText(out));
    return out;
  }
}
