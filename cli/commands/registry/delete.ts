import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { yesFlag, type Destructive } from "../../confirm.js";
import { registryApplyResult, type RegistryApplyResult } from "../../registry/results.js";
import { applyText } from "../../registry/text.js";

export default class RegistryDelete extends ConnectedCommand<typeof RegistryDelete> {
  static override summary = "Delete message types from the tenant's registry (one version step).";
  static override description = `Sends of a deleted type are refused from the reload interval (1 s) on; messages already sent keep it (their history entries carry the version they were sent under), and clients render them from preview_template when they do not know the type. Deleting call_record brings back the built-in default; the qim.* types cannot be deleted.

Confirmation: on a terminal it asks first; --yes skips the question; without a terminal --yes is required (else exit 2, nothing changed).

Needs the operator or admin role; audited. Exit codes: 0 deleted (also: already absent, with --ignore-not-found); 2 a bad name or no --yes without a terminal; 3 the tenant declared no such type; 4 the registry changed since --expect-version; 5 server unreachable; 6 refused certificate or role; 130 not confirmed.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> --type acme.poll.v1 --yes",
    "<%= config.bin %> <%= command.id %> -t acme.poll.v1,acme.note.v1 --dry-run",
  ];
  static override flags = {
    type: Flags.string({ char: "t", required: true, multiple: true, delimiter: ",", description: "a custom_type to delete; repeat the flag or separate with commas" }),
    "ignore-not-found": Flags.boolean({ description: "a type the tenant did not declare is not an error" }),
    "expect-version": Flags.integer({ min: 0, description: "refuse unless the registry is at this version" }),
    "dry-run": Flags.boolean({ description: "print what it would delete; change nothing" }),
    yes: yesFlag,
  };
  static override destructive: Destructive = { action: "delete the message type(s)", exceptWith: "dry-run" };

  async run(): Promise<RegistryApplyResult> {
    const names = [...new Set(this.flags.type)];
    const tenant = this.tenant();
    const { client } = await this.connect();
    await this.askFirst(`Delete message type(s) ${names.join(", ")}? Their sends are refused from then on. [y/N] `);
    const out = registryApplyResult(await client.applyTypes({
      tenant, put: [], delete: names, prune: false, ignoreMissing: this.flags["ignore-not-found"] === true,
      ...(this.flags["expect-version"] === undefined ? {} : { expectVersion: BigInt(this.flags["expect-version"]) }), dryRun: this.flags["dry-run"] === true,
    }));
    this.log(applyText(out, "apply"));
    return out;
  }
}
