import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { registryGetResult, type RegistryGetResult } from "../../registry/results.js";
import { getText } from "../../registry/text.js";

export default class RegistryGet extends ConnectedCommand<typeof RegistryGet> {
  static override summary = "Show one message type's declaration in force for the tenant (declared or built-in).";
  static override description = `Every field by the spec's name, and where it comes from: declared by the tenant, built-in, or a built-in the tenant replaced (call_record). The output of --output json's "type" is a valid registry file entry.

Any role. Exit codes: 0 shown; 2 not a type name; 3 no such type; 5 server unreachable; 6 refused certificate.`;
  static override examples = ["<%= config.bin %> <%= command.id %> --type acme.poll.v1", "<%= config.bin %> <%= command.id %> -t qim.recall.v1 --output json"];
  static override flags = { type: Flags.string({ char: "t", required: true, description: "the custom_type, e.g. acme.poll.v1" }) };

  async run(): Promise<RegistryGetResult> {
    const tenant = this.tenant();
    const { client } = await this.connect();
    const out = registryGetResult(await client.getType({ tenant, customType: this.flags.type }));
    this.log(getText(out));
    return out;
  }
}
