import * as Flags from "@oclif/core/flags";
import { memberPages } from "../../../admin-api/client.js";
import { REDIS_CALL_MEMBER_BUDGET } from "../../../core/base/index.js";
import { ConnectedCommand } from "../../base.js";
import { UsageError } from "../../exit-codes.js";
import { memberListResult, memberResult, type MemberListResult } from "../../membership/results.js";
import { memberListHead, memberListText, memberStreamHeader, memberStreamRow } from "../../membership/text.js";
import { uuid } from "../../validate.js";

export default class MembershipList extends ConnectedCommand<typeof MembershipList> {
  static override summary = "List everyone who ever was a member of a group, with intervals and states, a page at a time.";
  static override description = `Prints one row per user: state (ACTIVE, LEFT or REMOVED) and the visible interval (joined_at, left_at) in conversation_seq terms: the user sees records with joined_at < seq < left_at. Initial members have joined_at 0; left_at is "-" while the user is a member. The member version printed first is what --expect-version compares against.

Each page is one bounded scan step of the group's member table on the server (no call reads a whole big group): --limit N (1 to ${REDIS_CALL_MEMBER_BUDGET}, the default) is the page size aimed at; a page may hold fewer, even none with a cursor to go on, and a small group comes whole. Follow nextCursor (--cursor) until it is null, or use --all, which prints every page as it arrives and keeps none of it in memory (with --output json: the same document as one page, written as it goes, one member per line). Rows are in user-id order within a page and in no particular order across pages (not by joined_at); a member may show twice if Redis rehashed the table meanwhile.

Any role. Exit codes: 0 listed; 2 bad --group, --limit or --cursor; 3 no such group; 5 server unreachable; 6 refused certificate.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --group 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39",
    "<%= config.bin %> <%= command.id %> -g 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --limit 100 --cursor 1536",
    "<%= config.bin %> <%= command.id %> -g 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --all --json | jq -r '.members[] | select(.state == \"ACTIVE\") | .userId'",
  ];
  static override flags = {
    group: Flags.string({ char: "g", required: true, description: "the group's UUID" }),
    limit: Flags.integer({ char: "n", min: 1, max: REDIS_CALL_MEMBER_BUDGET, description: `page size aimed at, 1 to ${REDIS_CALL_MEMBER_BUDGET} (default ${REDIS_CALL_MEMBER_BUDGET})` }),
    cursor: Flags.string({ char: "c", exclusive: ["all"], description: "the nextCursor of the previous page" }),
    all: Flags.boolean({ char: "a", exclusive: ["cursor"], description: "every page, printed as it arrives" }),
  };

  async run(): Promise<MemberListResult> {
    const group = uuid("--group", this.flags.group);
    const cursor = this.flags.cursor;
    if (cursor !== undefined && !/^\d{1,20}$/.test(cursor)) throw new UsageError("--cursor", "not a cursor: give the nextCursor of a previous page as printed");
    const tenant = this.tenant();
    const limit = this.flags.limit ?? 0;
    const { client } = await this.connect();
    if (!this.flags.all) {
      const r = memberListResult({ ...(await client.listMembers({ tenant, group, limit, cursor: cursor ?? "" })), group });
      this.log(memberListText(r));
      return r;
    }
    let version = 0;
    let memberCount = 0;
    const n = await this.streamList(memberPages(client, { tenant, group, limit }), {
      itemsOf: (page) => page.members.map(memberResult),
      head: { group },
      key: "members",
      tail: (last) => {
        version = last === undefined ? 0 : Number(last.version);
        memberCount = last?.memberCount ?? 0;
        return { version, memberCount, nextCursor: null };
      },
      text: {
        head: (first) => `${memberListHead(group, Number(first.version), first.memberCount)}\n${memberStreamHeader()}`,
        row: memberStreamRow,
      },
    });
    this.note(`${n} row(s) listed; at the end: version ${version}, ${memberCount} current member(s)`);
    return { group, members: [], version, memberCount, nextCursor: null };
  }
}
