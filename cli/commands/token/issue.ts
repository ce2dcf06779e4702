import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { UsageError } from "../../exit-codes.js";
import { tokenIssueResult, type TokenIssueResult } from "../../token/results.js";
import { issuedText } from "../../token/text.js";
import { DEVICE_ID_MAX_CHARS, parseDurationMs, TOKEN_TTL_DEFAULT_MS, TOKEN_TTL_MAX_MS, TOKEN_TTL_MIN_MS } from "../../../core/base/index.js";
import { uuid } from "../../validate.js";

/** --ttl: 90s, 30m, 12h, 7d, within the server's bounds (checked here first, and again by the server). */
export function tokenTtl(flag: string, value: string | undefined): number {
  if (value === undefined) return 0;
  const ms = parseDurationMs(value, TOKEN_TTL_MIN_MS, TOKEN_TTL_MAX_MS);
  if (ms === null || ms === 0) {
    throw new UsageError(flag, `${flag} is a duration from ${TOKEN_TTL_MIN_MS / 60_000}m to ${TOKEN_TTL_MAX_MS / 86_400_000}d such as 90m, 12h or 7d, got ${JSON.stringify(value.slice(0, 32))}`);
  }
  return ms;
}

/** --device: 1 to DEVICE_ID_MAX_CHARS of A-Z a-z 0-9 . _ : - */
export function deviceId(flag: string, value: string | undefined): string {
  if (value === undefined || value.length === 0 || value.length > DEVICE_ID_MAX_CHARS || !/^[A-Za-z0-9._:-]+$/.test(value)) {
    throw new UsageError(flag, `${flag} is 1 to ${DEVICE_ID_MAX_CHARS} of A-Z a-z 0-9 . _ : -`);
  }
  return value;
}

export default class TokenIssue extends ConnectedCommand<typeof TokenIssue> {
  static override summary = "Issue a signed device token for one device of a user (what the device presents to the client gateway).";
  static override description = `The server signs the token with the newest key of its token key file (setting tokens.keys; see \`token keygen\`) and records its id, device and times in the user's list (\`token list\`); the token string itself is stored nowhere and written to no log: it is printed once, here — hand it to the device over a channel you trust. The audit log records the call (user, device, ttl) and the token id, never the token.

--ttl is the token's life: from ${TOKEN_TTL_MIN_MS / 60_000}m to ${TOKEN_TTL_MAX_MS / 86_400_000}d (TOKEN_TTL_MAX_MS), default ${TOKEN_TTL_DEFAULT_MS / 86_400_000}d. A user holds at most 1,000 live tokens. --dry-run checks everything and shows the claims without signing or recording.

Output: the sentence on stdout, then the token on a line of its own (table mode); with --output json the token is the "token" field.

Needs the operator or admin role. Exit codes: 0 issued; 2 bad --user, --device or --ttl; 4 the server has no token keys, or the user holds too many tokens; 5 server unreachable; 6 refused certificate or role.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --user 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b --device phone-1 --ttl 7d",
    { description: "Only the token, for a provisioning script", command: "<%= config.bin %> <%= command.id %> -u 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b -d phone-1 --ttl 12h --output json | jq -r .token" },
  ];
  static override flags = {
    user: Flags.string({ char: "u", required: true, description: "the user (UUID)" }),
    device: Flags.string({ char: "d", required: true, description: `the device id: 1 to ${DEVICE_ID_MAX_CHARS} of A-Z a-z 0-9 . _ : -` }),
    ttl: Flags.string({ description: `the token's life: 90m, 12h, 7d … (${TOKEN_TTL_MIN_MS / 60_000}m to ${TOKEN_TTL_MAX_MS / 86_400_000}d; default ${TOKEN_TTL_DEFAULT_MS / 86_400_000}d)` }),
    "dry-run": Flags.boolean({ description: "check and show the claims; sign and record nothing" }),
  };

  async run(): Promise<TokenIssueResult> {
    const user = uuid("--user", this.flags.user);
    const device = deviceId("--device", this.flags.device);
    const ttlMs = tokenTtl("--ttl", this.flags.ttl);
    const tenant = this.tenant();
    const { client } = await this.connect();
    const out = tokenIssueResult(await client.issueToken({ tenant, user, device, ttlMs: BigInt(ttlMs), dryRun: this.flags["dry-run"] === true }));
    this.log(issuedText(out));
    if (out.token !== null) this.log(out.token);
    return out;
  }
}
