import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { UsageError } from "../../exit-codes.js";
import { groupPages } from "../../../admin-api/client.js";
import { groupResult, type GroupListResult } from "../../group/results.js";
import { groupListText, groupStreamHeader, groupStreamRow } from "../../group/text.js";
import { GROUP_PAGE_DEFAULT, GROUP_PAGE_LIMIT } from "../../../core/base/index.js";
import { uuid } from "../../validate.js";

export default class GroupList extends ConnectedCommand<typeof GroupList> {
  static override summary = "List the tenant's groups, a page at a time (optionally those one user owns).";
  static override description = `Pages come from a bounded scan of the group keys on each Redis node in turn, so every group is listed whenever it was created, and no call reads every group at once. --limit N (1 to 1,000, default 100) is the page size aimed at: a page may hold a few more or fewer, even none while the scan crosses keys of other tenants; follow nextCursor (--cursor) until it is null, or use --all, which prints every page as it arrives and keeps none of it in memory (with --output json: the same document as one page, written as it goes, one group per line). A group may show on two pages if Redis rehashed meanwhile. Within a page, groups are in id order; across pages in no particular order. Each group is the object of group show, with its state (ACTIVE or DISSOLVED).

Any role. Exit codes: 0 listed (also none); 2 bad --owner, --limit or --cursor; 5 server unreachable; 6 refused certificate.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %>",
    "<%= config.bin %> <%= command.id %> --owner 1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f --all --json",
    "<%= config.bin %> <%= command.id %> --limit 20 --cursor 0.1536",
  ];
  static override flags = {
    owner: Flags.string({ description: "only the groups this user owns" }),
    limit: Flags.integer({ char: "n", min: 1, max: GROUP_PAGE_LIMIT, description: `page size aimed at, 1 to ${GROUP_PAGE_LIMIT} (default ${GROUP_PAGE_DEFAULT})` }),
    cursor: Flags.string({ char: "c", exclusive: ["all"], description: "the nextCursor of the previous page" }),
    all: Flags.boolean({ char: "a", exclusive: ["cursor"], description: "every page, printed as it arrives" }),
  };

  async run(): Promise<GroupListResult> {
    const owner = this.flags.owner === undefined ? "" : uuid("--owner", this.flags.owner);
    const cursor = this.flags.cursor;
    if (cursor !== undefined && !/^\d{1,4}\.\d{1,20}$/.test(cursor)) throw new UsageError("--cursor", "not a cursor: give the nextCursor of a previous page as printed");
    const tenant = this.tenant();
    const limit = this.flags.limit ?? 0;
    const { client } = await this.connect();
    if (!this.flags.all) {
      const p = await client.listGroups({ tenant, owner, limit, cursor: cursor ?? "" });
      const out: GroupListResult = { tenant, groups: p.groups.map(groupResult), nextCursor: p.nextCursor === "" ? null : p.nextCursor };
      this.log(groupListText(out));
      return out;
    }
    const n = await this.streamList(groupPages(client, { tenant, owner, limit }), {
      itemsOf: (p) => p.groups.map(groupResult),
      head: { tenant },
      key: "groups",
      tail: () => ({ nextCursor: null }),
      text: { head: () => groupStreamHeader(), row: groupStreamRow },
    });
    this.note(`${n} group(s) listed`);
    return { tenant, groups: [], nextCursor: null };
  }
}
