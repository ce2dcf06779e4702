import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { auditEntryResult, type AuditTailResult } from "../../audit/results.js";
import { auditTailText } from "../../audit/text.js";
import { LIMITS } from "../../validate.js";

export default class AuditTail extends ConnectedCommand<typeof AuditTail> {
  static override summary = "Print the newest entries of the admin API's audit log.";
  static override description = `The audit log is append-only and written before the server answers: every mutating call and every refused call (wrong role, and TLS handshakes the server refused) with principal, role, RPC, arguments, result, detail and duration. Oldest first. Needs the viewer, operator or admin role.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %>",
    "<%= config.bin %> <%= command.id %> --limit 200 --json | jq '.entries[] | select(.result != \"OK\")'",
  ];
  static override flags = {
    limit: Flags.integer({ char: "n", min: 1, max: LIMITS.auditTail, default: 50, description: `how many entries, 1 to ${LIMITS.auditTail}` }),
  };

  async run(): Promise<AuditTailResult> {
    const { limit } = this.flags;
    const { client } = await this.connect();
    const r = await client.tailAudit({ limit });
    const out: AuditTailResult = { entries: r.entries.map(auditEntryResult) };
    this.log(auditTailText(out));
    return out;
  }
}
