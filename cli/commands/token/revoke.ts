import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { yesFlag, type Destructive } from "../../confirm.js";
import { UsageError } from "../../exit-codes.js";
import { tokenRevokeResult, type TokenRevokeResult } from "../../token/results.js";
import { revokedText } from "../../token/text.js";
import { uuid } from "../../validate.js";
import { deviceId } from "./issue.js";

export default class TokenRevoke extends ConnectedCommand<typeof TokenRevoke> {
  static override summary = "Revoke one device token by its id, or every token of a user's device.";
  static override description = `--token-id ID revokes that token; --user U --device D revokes every token of that device issued up to now (a token issued afterwards works: issue a new one once the device is trusted again). The gateway refuses a revoked token from the next connection on (every verify reads the revocation; no cache outlives it).

A revocation is kept in Redis only until the tokens it covers expire: a token's revocation until its expiry, a device's for the longest token life (30 days). Re-running a token's revocation succeeds and says nothing changed. --dry-run shows the live tokens it would cover.

Confirmation: on a terminal it asks first; --yes skips the question; without a terminal --yes is required (else exit 2, nothing changed).

Needs the operator or admin role; audited. Exit codes: 0 revoked (or already was); 2 bad or missing flags, or no --yes without a terminal; 3 no live token with that id (unknown, or already expired); 4 the server has no token keys; 5 server unreachable; 6 refused certificate or role; 130 not confirmed.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --token-id 6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b --yes",
    { description: "A lost phone: every token of that device", command: "<%= config.bin %> <%= command.id %> --user 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b --device phone-1 --yes" },
    "<%= config.bin %> <%= command.id %> --user 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b --device phone-1 --dry-run",
  ];
  static override flags = {
    "token-id": Flags.string({ char: "t", exclusive: ["user", "device"], description: "the token's id (token list, or the id printed when it was issued)" }),
    user: Flags.string({ char: "u", dependsOn: ["device"], description: "with --device: the user whose device it is" }),
    device: Flags.string({ char: "d", dependsOn: ["user"], description: "with --user: revoke every token of this device issued up to now" }),
    "dry-run": Flags.boolean({ description: "show the tokens it would revoke; change nothing" }),
    yes: yesFlag,
  };
  static override destructive: Destructive = { action: "revoke the token(s)", exceptWith: "dry-run" };

  protected override checkFlags(flags: Readonly<Record<string, unknown>>): void {
    if (flags["token-id"] === undefined && flags.user === undefined) throw new UsageError("--token-id", "give --token-id ID, or --user U --device D");
  }

  async run(): Promise<TokenRevokeResult> {
    const byId = this.flags["token-id"] !== undefined;
    const tokenId = byId ? uuid("--token-id", this.flags["token-id"]) : "";
    const user = byId ? "" : uuid("--user", this.flags.user);
    const device = byId ? "" : deviceId("--device", this.flags.device);
    const tenant = this.tenant();
    const { client } = await this.connect();
    const target = byId ? `device token ${tokenId}` : `every token of user ${user} device ${device}`;
    await this.askFirst(`Revoke ${target}? Devices using it are refused at their next connection. [y/N] `);
    const out = tokenRevokeResult(await client.revokeTokens({ tenant, tokenId, user, device, dryRun: this.flags["dry-run"] === true }));
    this.log(revokedText(out, target));
    return out;
  }
}
