import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { UsageError } from "../../exit-codes.js";
import { tokenListResult, type TokenListResult } from "../../token/results.js";
import { listText } from "../../token/text.js";
import { TOKEN_LIST_PAGE } from "../../../core/base/index.js";
import { uuid } from "../../validate.js";

export default class TokenList extends ConnectedCommand<typeof TokenList> {
  static override summary = "List a user's live device tokens (issued, not expired, not revoked), a page at a time.";
  static override description = `Ids, devices, issue and expiry times and the signing key of each token, by expiry; never a token string (the server does not keep them). --limit N (1 to ${TOKEN_LIST_PAGE.max}, default ${TOKEN_LIST_PAGE.default}); follow nextPageToken with --page-token until it is null. A user holds at most 1,000 live tokens.

Any role. Exit codes: 0 listed (also none); 2 bad --user, --limit or --page-token; 4 the server has no token keys; 5 server unreachable; 6 refused certificate.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --user 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b",
    "<%= config.bin %> <%= command.id %> -u 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b --limit 20 --page-token 1796000000000:6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b --output json",
  ];
  static override flags = {
    user: Flags.string({ char: "u", required: true, description: "the user (UUID)" }),
    limit: Flags.integer({ char: "n", min: 1, max: TOKEN_LIST_PAGE.max, description: `page size, 1 to ${TOKEN_LIST_PAGE.max} (default ${TOKEN_LIST_PAGE.default})` }),
    "page-token": Flags.string({ description: "the nextPageToken of the previous page" }),
  };

  async run(): Promise<TokenListResult> {
    const user = uuid("--user", this.flags.user);
    const pageToken = this.flags["page-token"] ?? "";
    if (pageToken !== "" && !/^\d{1,16}:[0-9a-f-]{36}$/.test(pageToken)) throw new UsageError("--page-token", "not a page token: give the nextPageToken of a previous page as printed");
    const tenant = this.tenant();
    const { client } = await this.connect();
    const out = tokenListResult({ ...(await client.listTokens({ tenant, user, limit: this.flags.limit ?? 0, pageToken })), tenant, user });
    this.log(listText(out));
    return out;
  }
}
