import { ConnectedCommand } from "../../base.js";
import { EXIT } from "../../exit-codes.js";
import { dispatchAuditResult, type DispatchAuditResult } from "../../dispatch/results.js";
import { auditText, notOkMessage } from "../../dispatch/text.js";

export default class DispatchAudit extends ConnectedCommand<typeof DispatchAudit> {
  static override summary = "Audit the dispatch log's retention window against the session projection, per partition.";
  static override description = `Changes nothing. Per partition, the verdict the projection's consumer would reach at start-up:

  OK                 the checkpoint is inside [low, high]: nothing was lost
  NO_CHECKPOINT      no checkpoint; with low > 0 the offsets [0, low) may never have been projected (lost range shown)
  OVER_WINDOW        the checkpoint is behind the low watermark: offsets [checkpoint, low) left the retention window unread (lost range shown); the server bumps the epoch so that users are rebuilt from the authority
  BEYOND_HIGH        the checkpoint is beyond the high watermark: the log lost records it had acknowledged; the server refuses to start
  IDENTITY_MISMATCH  the log or the checkpoint belongs to another cluster id / topic / partition count; the server refuses to start

Any role. Exit codes: 0 every partition OK; 4 at least one partition is not OK (the table, or the JSON result on stdout, says which; the error on stderr counts them); 5 server unreachable; 6 refused certificate.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %>",
    {
      description: "In CI: fail the job unless every partition is OK",
      command: "<%= config.bin %> <%= command.id %> --json > dispatch-audit.json || echo \"dispatch window not OK (exit $?)\"",
    },
  ];

  async run(): Promise<DispatchAuditResult> {
    const { client } = await this.connect();
    const out = dispatchAuditResult(await client.auditDispatch({}));
    this.log(auditText(out));
    if (!out.ok) this.failWithResult(out, { exitCode: EXIT.CONFLICT, code: "DISPATCH_AUDIT_NOT_OK", message: notOkMessage(out) });
    return out;
  }
}
