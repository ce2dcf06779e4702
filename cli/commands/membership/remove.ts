import { yesFlag, type Destructive } from "../../confirm.js";
import { MembershipChangeCommand, membershipChangeFlags } from "../../membership/change.js";
import type { MembershipBulkLine, MembershipChangeResult } from "../../membership/results.js";

export default class MembershipRemove extends MembershipChangeCommand<typeof MembershipRemove> {
  static override summary = "Remove users from a group as one membership event (--from-file: in batches, one event each).";
  static override description = `Commits one CONTROL message (op remove) that takes a conversation_seq J: each removed user's interval closes at left_at = J (state REMOVED); they keep reading the history before J and see nothing from J on. Users who are not members are filtered out; a re-run after the change took effect changes nothing, says so and exits 0.

Confirmation: when stdin is a terminal, the plan is shown first and the change is committed only after you answer y, pinned to the planned member version (a concurrent change makes it exit 4). --yes skips the question. When stdin is NOT a terminal (scripts, CI, pipes) there is never a prompt, and the removal needs --yes (else exit 2, nothing changed). --dry-run never needs --yes.

--dry-run prints the plan and writes nothing; --expect-version V refuses the change (exit 4) unless the group is at member version V. Needs the operator or admin role.

From a file: --from-file FILE (- for stdin) works as for membership add (see its --help): the file is checked whole before anything is sent, the users go in batches of at most 1,000, each its own event, JSON lines with --output json, and re-running the same command resumes. On a terminal every batch is planned first and ONE question covers the whole file; the run is then pinned to the planned version, batch after batch (a concurrent change stops it with exit 4; re-run to resume). Without a terminal it needs --yes as above; --from-file - needs --yes (stdin holds the users, so it cannot answer).`;
  static override examples = [
    {
      description: "Remove a user (asks for confirmation on a terminal)",
      command: "<%= config.bin %> <%= command.id %> --group 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --user 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b",
    },
    {
      description: "In a script (no terminal): --yes is required; compare-and-set against version 4, JSON result",
      command: "<%= config.bin %> <%= command.id %> -g 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 -u 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b --yes --expect-version 4 --json",
    },
    {
      description: "Remove every user listed in the user column of a CSV file, in batches, from a script",
      command: "<%= config.bin %> <%= command.id %> -g 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --from-file leavers.csv --yes --output json",
    },
  ];
  static override flags = {
    ...membershipChangeFlags,
    yes: yesFlag,
  };
  static override destructive: Destructive = { action: "remove members", exceptWith: "dry-run" };

  protected readonly op = "remove" as const;

  async run(): Promise<MembershipChangeResult | MembershipBulkLine> {
    return this.change();
  }
}
