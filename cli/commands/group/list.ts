import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { UsageError } from "../../exit-codes.js";
import { groupResult, type GroupListResult, type GroupResult } from "../../group/results.js";
import { groupListText } from "../../group/text.js";
import { uuid } from "../../validate.js";

export default class GroupList extends ConnectedCommand<typeof GroupList> {
  static override summary = "List the tenant's groups, a page at a time (optionally those one user owns).";
  static override description = `Pages come from a bounded scan of the group keys on each Redis node in turn, so every group is listed whenever it was created, and no call reads every group at once. --limit N (1 to 1,000, default 100) is the page size aimed at: a page may hold a few more or fewer, even none while the scan crosses keys of other tenants; follow nextCursor (--cursor) until it is null, or use --all. A group may show on two pages if Redis rehashed meanwhile (--all removes the repeat). Within a page, groups are in id order. Each group is the object of group show, with its state (ACTIVE or DISSOLVED).

Any role. Exit codes: 0 listed (also none); 2 bad --owner, --limit or --cursor; 5 server unreachable; 6 refused certificate.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %>",
    "<%= config.bin %> <%= command.id %> --owner 1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f --all --json",
    "<%= config.bin %> <%= command.id %> --limit 20 --cursor 0.1536",
  ];
  static override flags = {
    owner: Flags.string({ description: "only the groups this user owns" }),
    limit: Flags.integer({ char: "n", min: 1, max: 1000, description: "page size aimed at, 1 to 1000 (default 100)" }),
    cursor: Flags.string({ char: "c", exclusive: ["all"], description: "the nextCursor of the previous page" }),
    all: Flags.boolean({ char: "a", exclusive: ["cursor"], description: "every page, followed for you" }),
  };

  async run(): Promise<GroupListResult> {
    const owner = this.flags.owner === undefined ? "" : uuid("--owner", this.flags.owner);
    const cursor = this.flags.cursor;
    if (cursor !== undefined && !/^\d{1,4}\.\d{1,20}$/.test(cursor)) throw new UsageError("--cursor", "not a cursor: give the nextCursor of a previous page as printed");
    const tenant = this.tenant();
    const limit = this.flags.limit ?? 0;
    const { client } = await this.connect();
    const page = async (c: string) => client.listGroups({ tenant, owner, limit, cursor: c });
    let out: GroupListResult;
    if (!this.flags.all) {
      const p = await page(cursor ?? "");
      out = { tenant, groups: p.groups.map(groupResult), nextCursor: p.nextCursor === "" ? null : p.nextCursor };
    } else {
      const seen = new Map<string, GroupResult>();
      let next = "";
      do {
        const p = await page(next);
        for (const g of p.groups) seen.set(g.group, groupResult(g));
        next = p.nextCursor;
      } while (next !== "");
      out = { tenant, groups: [...seen.values()].sort((a, b) => (a.group < b.group ? -1 : 1)), nextCursor: null };
    }
    this.log(groupListText(out));
    return out;
  }
}
