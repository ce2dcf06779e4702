import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { auditEntryResult, type AuditTailResult } from "../../audit/results.js";
import { auditLine, auditTailText } from "../../audit/text.js";
import { UsageError } from "../../exit-codes.js";
import { LIMITS } from "../../validate.js";

export default class AuditTail extends ConnectedCommand<typeof AuditTail> {
  static override summary = "Print the newest entries of the admin API's audit log; --follow keeps printing new ones.";
  static override description = `The audit log is append-only and written before the server answers: every mutating call and every refused call (wrong role, and TLS handshakes the server refused) with principal, role, RPC, arguments, result, detail and duration. Oldest first, read across the server's rotated files (audit.log, audit.log.1, …: the server's audit.max_size and audit.keep).

--follow: the newest --limit entries (0: none), then every entry as the server writes it, across rotations, each once, until Ctrl+C (exit 130). Table mode prints one line per entry; with --output json, one JSON object per line (the shape of one element of "entries"). When the server goes away or shuts down the stream ends with exit 5; a reader that stops reading (| head) ends it quietly.

Needs the viewer, operator or admin role. Exit codes: 0 ok; 2 bad --limit (checked before connecting); 5 server unreachable, or gone while following; 6 refused certificate or role; 130 Ctrl+C.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %>",
    "<%= config.bin %> <%= command.id %> --limit 200 --json | jq '.entries[] | select(.result != \"OK\")'",
    {
      description: "Watch what is being done, as it is done; refusals only, as JSON lines",
      command: "<%= config.bin %> <%= command.id %> --follow --limit 0 --output json | jq -c 'select(.result != \"OK\")'",
    },
  ];
  static override flags = {
    limit: Flags.integer({ char: "n", min: 0, max: LIMITS.auditTail, default: 50, description: `how many entries, 1 to ${LIMITS.auditTail} (with --follow: the newest to show first, 0 for none)` }),
    follow: Flags.boolean({ char: "f", description: "then keep printing entries as the server writes them, until Ctrl+C" }),
  };

  async run(): Promise<AuditTailResult> {
    const { limit, follow } = this.flags;
    if (limit === 0 && !follow) throw new UsageError("--limit", "0 entries: give 1 or more (0 only with --follow)");
    const { client } = await this.connect();
    if (follow) return this.follow(client, limit);
    const r = await client.tailAudit({ limit });
    const out: AuditTailResult = { entries: r.entries.map(auditEntryResult) };
    this.log(auditTailText(out));
    return out;
  }

  /** Prints entries as they arrive until the stream ends (Ctrl+C: base.ts exits 130). Returns nothing to print. */
  private async follow(client: Awaited<ReturnType<AuditTail["connect"]>>["client"], limit: number): Promise<never> {
    return this.printStream((onEntries) => client.followAudit({ limit }, onEntries), (entries: Parameters<typeof auditEntryResult>[0][]) => entries.map(auditEntryResult), auditLine);
  }
}
