import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { EXIT } from "../../exit-codes.js";
import { readRegistryFile } from "../../registry/file.js";
import { registryApplyResult, type RegistryApplyResult } from "../../registry/results.js";
import { applyText } from "../../registry/text.js";

export default class RegistryApply extends ConnectedCommand<typeof RegistryApply> {
  static override summary = "Apply a file of message type declarations to the tenant's registry: the diff first, then one version step.";
  static override description = `Declarative, like kubectl apply: FILE (YAML or JSON; - for stdin) lists declarations by the spec's field names (custom_type, delivery_class, counts_unread, affects_session_order, timeline_visible, anchor_mode, preview_template, max_payload_bytes, minimum_client_version, schema_version); a field left out gets its default (docs/operator-guide.md "Message types"). The whole file is checked locally first: every bad declaration is named and nothing is sent.

The diff is printed first (+ create, ~ update with each field's old and new value, - delete), then the change is applied as ONE version step of the registry, compared against the version the diff was read at (a concurrent change refuses it, exit 4, nothing written: run it again). Types the file leaves out stay, unless --prune (then the file is the whole registry). Re-applying the same file changes nothing and keeps the version (exit 0; with --exit-code, 4). Every node uses the new version within the reload interval (1 s), with no restart. The qim.* types are the engine's own and cannot be declared; call_record may be (it replaces the built-in default).

Needs the operator or admin role; audited. Exit codes: 0 applied, or nothing to change; 2 a bad file or declaration (nothing sent); 4 the registry changed since it was read, more than 256 types, or (--exit-code) nothing changed; 5 server unreachable; 6 refused certificate or role.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %> -f types.yaml --dry-run",
    "<%= config.bin %> <%= command.id %> -f types.yaml",
    { description: "The file is the whole registry: types not in it are deleted", command: "<%= config.bin %> <%= command.id %> -f types.yaml --prune --output json" },
    { description: "In CI: roll out only when something changed", command: "<%= config.bin %> <%= command.id %> -f types.yaml --exit-code && ./notify-clients.sh" },
  ];
  static override flags = {
    file: Flags.string({ char: "f", required: true, description: "the declarations (YAML or JSON; - for stdin)" }),
    prune: Flags.boolean({ description: "also delete the declared types the file leaves out" }),
    "expect-version": Flags.integer({ min: 0, description: "refuse unless the registry is at this version (the version a diff was read at)" }),
    "exit-code": Flags.boolean({ description: "exit 4 (REGISTRY_UNCHANGED) when nothing changed" }),
    "dry-run": Flags.boolean({ description: "print the diff; change nothing" }),
  };

  async run(): Promise<RegistryApplyResult> {
    const put = await readRegistryFile(this.flags.file, "--file");
    const tenant = this.tenant();
    const { client } = await this.connect();
    const out = registryApplyResult(await client.applyTypes({
      tenant, put, delete: [], prune: this.flags.prune === true, ignoreMissing: false,
      ...(this.flags["expect-version"] === undefined ? {} : { expectVersion: BigInt(this.flags["expect-version"]) }), dryRun: this.flags["dry-run"] === true,
    }));
    this.log(applyText(out, "apply"));
    if (this.flags["exit-code"] === true && !this.flags["dry-run"] && !out.changed) {
      this.failWithResult(out, { exitCode: EXIT.CONFLICT, code: "REGISTRY_UNCHANGED", message: `nothing changed: the registry (version ${out.version}) already holds ${this.flags.file}` });
    }
    return out;
  }
}
