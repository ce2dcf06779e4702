import { MembershipChangeCommand, membershipChangeFlags } from "../../membership/change.js";
import type { MembershipBulkLine, MembershipChangeResult } from "../../membership/results.js";

export default class MembershipAdd extends MembershipChangeCommand<typeof MembershipAdd> {
  static override summary = "Add users to a group as one membership event (--from-file: in batches, one event each).";
  static override description = `Commits one CONTROL message (op join) that takes a conversation_seq J: each added user's visible interval starts at joined_at = J - 1, so the join event is the first record they can read. Users who are already members are filtered out; a re-run after the change took effect changes nothing, says so and exits 0 (outcome duplicate or noop).

Prints the event conversation_seq, the new member version and the member count. --dry-run asks the server for the plan (targets after filtering, audience size, idempotency id) and writes nothing. --expect-version V refuses the change (exit 4) unless the group is at member version V.

From a file: --from-file FILE (- for stdin) takes the users from FILE, one UUID per line or CSV with a "user" column (other columns ignored; blank lines and # comments skipped), together with any --user. The whole file is checked first: every bad line is reported with its line number and nothing is sent (exit 2); users named twice are folded. The distinct users, sorted, go in batches of at most 1,000 (the server's limit per call), each its own membership event. With --output json it prints JSON lines: one per batch as it is answered ({"type":"batch","batch":2,"of":5,"outcome":"committed","eventConversationSeq":…,"changed":…,"unchanged":…}), then a summary line (events with their seqs, users changed and unchanged, the failed batch). A progress bar goes to stderr on a terminal.

Resuming: Ctrl+C stops after the batch in flight (never in the middle of a call), prints how to resume and exits 130; a failed batch stops the run with the failure's exit code. Either way, re-run the same command: it makes the same batches, those already applied come back duplicate or noop, and only what is missing is added. --dry-run plans every batch and writes nothing. --expect-version is refused with --from-file.

Needs the operator or admin role.`;
  static override examples = [
    {
      description: "Add two users",
      command: "<%= config.bin %> <%= command.id %> --group 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --user 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b --user 9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d",
    },
    {
      description: "Show the plan only, then commit it only if nobody changed the group meanwhile",
      command: "<%= config.bin %> <%= command.id %> -g 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 -u 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b --dry-run --output json",
    },
    "<%= config.bin %> <%= command.id %> -g 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 -u 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b --expect-version 3",
    {
      description: "Add every user of a file in batches of 1,000 (re-run the same command to resume after Ctrl+C or a failure)",
      command: "<%= config.bin %> <%= command.id %> -g 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --from-file users.txt",
    },
    {
      description: "Plan the batches of a CSV export read from stdin, as JSON lines",
      command: "cut -d, -f1,3 export.csv | <%= config.bin %> <%= command.id %> -g 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --from-file - --dry-run --output json",
    },
  ];
  static override flags = { ...membershipChangeFlags };

  protected readonly op = "join" as const;

  async run(): Promise<MembershipChangeResult | MembershipBulkLine> {
    return this.change();
  }
}
