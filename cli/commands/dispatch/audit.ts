import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { EXIT } from "../../exit-codes.js";
import { auditJUnit } from "../../dispatch/junit.js";
import { dispatchAuditResult, type DispatchAuditResult } from "../../dispatch/results.js";
import { auditText, notOkMessage } from "../../dispatch/text.js";
import { junitXml } from "../../junit.js";
import { writableFile, writeFileWhole } from "../../output-files.js";

export default class DispatchAudit extends ConnectedCommand<typeof DispatchAudit> {
  static override summary = "Audit the dispatch log's retention window against the session projection, per partition.";
  static override description = `Changes nothing. Per partition, the verdict the projection's consumer would reach at start-up:

  OK                 the checkpoint is inside [low, high]: nothing was lost
  NO_CHECKPOINT      no checkpoint; with low > 0 the offsets [0, low) may never have been projected (lost range shown)
  OVER_WINDOW        the checkpoint is behind the low watermark: offsets [checkpoint, low) left the retention window unread (lost range shown); the server bumps the epoch so that users are rebuilt from the authority
  BEYOND_HIGH        the checkpoint is beyond the high watermark: the log lost records it had acknowledged; the server refuses to start
  IDENTITY_MISMATCH  the log or the checkpoint belongs to another cluster id / topic / partition count; the server refuses to start

CI: --junit FILE also writes JUnit XML, ok or not: one <testcase> per partition ("partition N"), with a <failure> of the verdict's type when it is not OK whose message gives the checkpoint, low, high and lag (and the lost range).

Any role. Exit codes: 0 every partition OK; 4 at least one partition is not OK (the table, or the JSON result on stdout, says which; the error on stderr counts them); 2 a --junit file that cannot be written (checked before connecting); 5 server unreachable; 6 refused certificate.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %>",
    {
      description: "In CI: fail the job unless every partition is OK",
      command: "<%= config.bin %> <%= command.id %> --json > dispatch-audit.json || echo \"dispatch window not OK (exit $?)\"",
    },
    {
      description: "In CI: JUnit XML for the CI system's test view",
      command: "<%= config.bin %> <%= command.id %> --junit dispatch-audit-junit.xml",
    },
  ];
  static override flags = {
    junit: Flags.string({ description: "also write JUnit XML to this file: a test case per partition, a failure when it is not OK" }),
  };

  async run(): Promise<DispatchAuditResult> {
    const junitFile = this.flags.junit !== undefined ? writableFile("--junit", this.flags.junit) : undefined;
    const { client, endpoint } = await this.connect();
    const startedAt = new Date().toISOString();
    const t0 = performance.now();
    const out = dispatchAuditResult(await client.auditDispatch({}));
    if (junitFile !== undefined) writeFileWhole(junitFile, junitXml(auditJUnit(out, endpoint, startedAt, (performance.now() - t0) / 1000)));
    this.log(auditText(out));
    if (!out.ok) this.failWithResult(out, { exitCode: EXIT.CONFLICT, code: "DISPATCH_AUDIT_NOT_OK", message: notOkMessage(out) });
    return out;
  }
}
