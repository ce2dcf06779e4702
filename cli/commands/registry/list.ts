import { ConnectedCommand } from "../../base.js";
import { registryListResult, type RegistryListResult } from "../../registry/results.js";
import { listText } from "../../registry/text.js";

export default class RegistryList extends ConnectedCommand<typeof RegistryList> {
  static override summary = "List the tenant's message types: the built-ins and its declarations, with the registry version.";
  static override description = `One row per type: delivery class, whether it counts toward unread, moves the conversation in the list, shows in the timeline, its schema version and payload limit, and its source. A tenant declares at most 256 types, so the list is one answer. With --output json, each entry of "types" is a registry file entry (plus builtIn and declared).

Any role. Exit codes: 0 listed; 5 server unreachable; 6 refused certificate.`;
  static override examples = ["<%= config.bin %> <%= command.id %>", "<%= config.bin %> <%= command.id %> --output json"];

  async run(): Promise<RegistryListResult> {
    const tenant = this.tenant();
    const { client } = await this.connect();
    const out = registryListResult(await client.listTypes({ tenant }));
    this.log(listText(out));
    return out;
  }
}
