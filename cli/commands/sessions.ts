import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../base.js";
import { UsageError } from "../exit-codes.js";
import { groupsResult, pageResult, type SessionsResult, type SummaryResult } from "../sessions/results.js";
import { sessionsText } from "../sessions/text.js";
import { LIMITS, optionalUuidList, uuid } from "../validate.js";

/** --all: how many times the walk starts again from page 1 when the list changes shape under it. */
export const ALL_RESTARTS_MAX = 5;
const CURSOR_CHARS_MAX = 200;

export default class Sessions extends ConnectedCommand<typeof Sessions> {
  static override summary = "Show a user's conversation list: pinned first, then newest activity, with unread, mentions, pinned, muted, archived.";
  static override description = `Without --group: one page of the user's list from the engine's in-memory snapshot (spec 002 §6): the pinned zone (pin rank, then newest activity), then every other conversation, newest activity first. --limit rows per page (default 50, at most 200); the page ends with nextCursor: pass it as --cursor for the next page (strictly after the last row: no duplicate, no gap). --all walks every page for you. A user with more than 5,000 conversations (max_conversations_per_user) gets the first 5,000 in the list's order, with snapshotTruncated true (in a table, a line saying so): --all then returns those 5,000 and exits 0.

The snapshot has a revision. New messages and unread changes update it in place (a watcher gets them as deltas, see \`sessions watch\`); a pin, unpin, archive, leave or delete gives it a new revision. A --cursor of an older revision gets the NEW revision's first page with projectionComplete false (the only meaning of false): start again from there (--all does so by itself, up to ${ALL_RESTARTS_MAX} times). A cleared conversation stays in the list with no head and no unread; a deleted one leaves it until a new message arrives.

Per conversation: the member state and interval, read position, the latest record the user may see (the head), unread (the engine's cached count, corrected to the definition of spec 002 §3.1; unreadExact is false when capped at 200), mentions, pinned/pinRank, muted, archived.

With --group: only the groups named (at most ${LIMITS.summaryGroups}), read directly from the groups with the definitional unread, without the list engine: mentions, pinned, pinRank, muted, archived, snapshotRevision, projectionComplete, snapshotTruncated, maxConversationsPerUser, nextCursor and total are null.

Any role. Exit codes: 0 listed (also an empty list); 2 bad --user/--group/--limit/--cursor (a cursor that is not one of this list's); 4 --all found the list changing shape ${ALL_RESTARTS_MAX} times in a row; 5 server unreachable; 6 refused certificate.`;
  static override examples = [
    {
      description: "The first page of the user's conversation list",
      command: "<%= config.bin %> <%= command.id %> --user 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b",
    },
    {
      description: "The next page: the nextCursor of the previous one",
      command: "<%= config.bin %> <%= command.id %> -u 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b --cursor CAEQAiIQAZKqqgAAcACAAAAAAAAACSoQAAAAAAAAQACAAAAAAAAABA",
    },
    {
      description: "Every conversation, as JSON (pages followed for you)",
      command: "<%= config.bin %> <%= command.id %> -u 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b --all --json | jq '.summaries[] | select(.unread > 0) | .group'",
    },
    "<%= config.bin %> <%= command.id %> -u 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b -g 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39,7e6d5c4b-3a29-4180-9f7e-6d5c4b3a2918 --json",
  ];
  static override flags = {
    user: Flags.string({ char: "u", required: true, description: "the user's UUID" }),
    group: Flags.string({ char: "g", multiple: true, delimiter: ",", description: `group UUID; repeat or separate with commas (at most ${LIMITS.summaryGroups}); without it, the user's list from the engine` }),
    limit: Flags.integer({ char: "n", min: 1, max: LIMITS.sessionPage, exclusive: ["group"], description: `conversations per page, 1 to ${LIMITS.sessionPage} (default 50; not with --group)` }),
    cursor: Flags.string({ char: "c", exclusive: ["group", "all"], description: "the nextCursor of the previous page: the page strictly after it" }),
    all: Flags.boolean({ char: "a", exclusive: ["group", "cursor"], description: "every page, followed for you (restarts from page 1 when the list changes shape)" }),
  };

  async run(): Promise<SessionsResult> {
    const user = uuid("--user", this.flags.user);
    const groups = optionalUuidList("--group", this.flags.group, LIMITS.summaryGroups);
    const cursor = this.flags.cursor;
    if (cursor !== undefined && (cursor.length === 0 || cursor.length > CURSOR_CHARS_MAX || !/^[A-Za-z0-9_-]+$/.test(cursor))) {
      throw new UsageError("--cursor", "not a cursor: give the nextCursor of a previous page as printed (base64url)");
    }
    const tenant = this.tenant();
    const { client } = await this.connect();
    let out: SessionsResult;
    if (groups.length > 0) out = groupsResult(user, await client.listConversationSummaries({ tenant, user, groups }));
    else if (this.flags.all) out = await this.walk(client, tenant, user);
    else out = pageResult(user, await client.listConversations({ tenant, user, limit: this.flags.limit ?? 0, cursor: cursor ?? "" }));
    this.log(sessionsText(out));
    return out;
  }

  /**
   * Every page; from page 1 again when the revision changes under the walk (spec 002 §6.3), and
   * only then: a truncated snapshot is walked to its end like any other (snapshotTruncated says so).
   */
  private async walk(client: Awaited<ReturnType<Sessions["connect"]>>["client"], tenant: string, user: string): Promise<SessionsResult> {
    const limit = this.flags.limit ?? LIMITS.sessionPage;
    for (let attempt = 0; attempt <= ALL_RESTARTS_MAX; attempt++) {
      const summaries: SummaryResult[] = [];
      let page = pageResult(user, await client.listConversations({ tenant, user, limit, cursor: "" }));
      const revision = page.snapshotRevision;
      let truncated = page.snapshotTruncated === true;
      summaries.push(...page.summaries);
      while (page.nextCursor && page.projectionComplete) {
        if (summaries.length % 1000 < limit) this.note(`${summaries.length} of ${page.total} conversation(s) …`);
        page = pageResult(user, await client.listConversations({ tenant, user, limit, cursor: page.nextCursor }));
        if (page.snapshotRevision !== revision || !page.projectionComplete) break;
        truncated ||= page.snapshotTruncated === true;
        summaries.push(...page.summaries);
      }
      if (page.snapshotRevision === revision && page.projectionComplete && page.nextCursor === null) {
        return { ...page, summaries, nextCursor: null, snapshotTruncated: truncated };
      }
      this.note(`the list changed shape (revision ${revision} → ${page.snapshotRevision}); starting again from page 1`);
    }
    // a refused precondition by shape (exit 4), as classifyError reads core's errors
    throw Object.assign(new Error(`the list changed shape ${ALL_RESTARTS_MAX + 1} times during --all; try again`), { code: "FAILED_PRECONDITION", details: {} });
  }
}
