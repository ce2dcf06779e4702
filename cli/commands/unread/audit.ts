import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { EXIT, UsageError } from "../../exit-codes.js";
import { unreadAuditResult, type UnreadAuditResult } from "../../unread/results.js";
import { driftMessage, unreadAuditText } from "../../unread/text.js";

export default class UnreadAudit extends ConnectedCommand<typeof UnreadAudit> {
  static override summary = "Sample idle conversations with unread and compare the cached unread with the definition; print the drift.";
  static override description = `The spec's unread audit (spec 002 §3.4): rows that have unread and have not changed for 24 h are sampled at --sample-rate (default: the server's unread_audit_sample_rate, 0.01), each recomputed from the history and compared with the cached unread and mentions. Reads only; nothing is corrected (badge reconcile --user U does that). The server exports the ratio as qim_unread_drift_ratio.

Needs the viewer, operator or admin role. Exit codes: 0 audited, no sampled row drifted; 4 drift found (the report is still printed — the table, or the JSON on stdout — and the error on stderr names the count: a script or a cron job sees the drift without parsing it, as with drill rebuild and dispatch audit); 2 bad --sample-rate; 5 server unreachable; 6 refused certificate or role.`;
  static override examples = ["<%= config.bin %> <%= command.id %>", "<%= config.bin %> <%= command.id %> --sample-rate 1 --json | jq '.drifts[]'"];
  static override flags = {
    "sample-rate": Flags.string({ char: "r", description: "the fraction of candidate rows to check, in (0, 1] (default: the server's, 0.01)" }),
  };

  async run(): Promise<UnreadAuditResult> {
    const raw = this.flags["sample-rate"];
    const sampleRate = raw === undefined ? 0 : Number(raw);
    if (raw !== undefined && !(/^\d*\.?\d+$/.test(raw) && sampleRate > 0 && sampleRate <= 1)) throw new UsageError("--sample-rate", `a fraction in (0, 1], got ${JSON.stringify(raw)}`);
    const { client } = await this.connect();
    const out = unreadAuditResult(await client.auditUnread({ sampleRate }));
    this.log(unreadAuditText(out));
    if (out.drifted > 0) this.failWithResult(out, { exitCode: EXIT.CONFLICT, code: "UNREAD_DRIFT", message: driftMessage(out) });
    return out;
  }
}
