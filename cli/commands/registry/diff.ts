import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { EXIT } from "../../exit-codes.js";
import { readRegistryFile } from "../../registry/file.js";
import { registryApplyResult, type RegistryApplyResult } from "../../registry/results.js";
import { applyText } from "../../registry/text.js";

export default class RegistryDiff extends ConnectedCommand<typeof RegistryDiff> {
  static override summary = "Show how a file of message type declarations differs from the tenant's registry; change nothing.";
  static override description = `What registry apply -f FILE would do, read from the server without changing anything: + create, ~ update (each field's old and new value), - delete (with --prune: the declared types the file leaves out). The result's fromVersion is the registry version it was read at: give it to registry apply --expect-version to apply exactly this diff.

Any role. Exit codes: 0 the registry already matches the file; 4 it differs (REGISTRY_DIFFERS: the diff is printed, and in JSON the result goes to stdout); 2 a bad file or declaration; 5 server unreachable; 6 refused certificate.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> -f types.yaml",
    "<%= config.bin %> <%= command.id %> -f types.yaml --prune --output json",
  ];
  static override flags = {
    file: Flags.string({ char: "f", required: true, description: "the declarations (YAML or JSON; - for stdin)" }),
    prune: Flags.boolean({ description: "count the declared types the file leaves out as deletes" }),
  };

  async run(): Promise<RegistryApplyResult> {
    const put = await readRegistryFile(this.flags.file, "--file");
    const tenant = this.tenant();
    const { client } = await this.connect();
    const out = registryApplyResult(await client.applyTypes({ tenant, put, delete: [], prune: this.flags.prune === true, ignoreMissing: false, dryRun: true }));
    this.log(applyText(out, "diff"));
    const differ = out.changes.filter((c) => c.action !== "unchanged").length;
    if (differ > 0) this.failWithResult(out, { exitCode: EXIT.CONFLICT, code: "REGISTRY_DIFFERS", message: `${differ} type(s) of ${this.flags.file} differ from the registry (version ${out.fromVersion})` });
    return out;
  }
}
