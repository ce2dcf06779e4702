import { ConnectedCommand } from "../../base.js";
import { cmdStatusResult, type CmdStatusResult } from "../../cmd/results.js";
import { statusText } from "../../cmd/text.js";

export default class CmdStatus extends ConnectedCommand<typeof CmdStatus> {
  static override summary = "The CMD sync's state on the answering server, and every pending file set aside as .bad.";
  static override description = `Prints how many CMD conversation updates the answering server holds in its pending buffer (not yet flushed), and every CMD pending file that did not decode at a node's start-up and was renamed <dataDir>/conversationv2/cmd_conversation_updates.json.bad: the node, the path on that node's machine and when it was set aside. The updates in such a file were not restored (the owners' catch-up scan re-derives them from the CMD log); inspect the file, then delete it — the answering server's own entry, its qim_cmd_pending_file_bad gauge and the QimCmdPendingFileBad alert clear as soon as it is gone; another node's entry stays until that node's next start. Read only.

Any role. Exit codes: 0 answered (a .bad file is a warning, not a failure); 5 server unreachable; 6 refused certificate or role.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %>",
    { description: "Fail a check when some node set a pending file aside", command: "<%= config.bin %> <%= command.id %> --output json | jq -e '.badFiles | length == 0'" },
  ];
  static override flags = {};

  async run(): Promise<CmdStatusResult> {
    const { client } = await this.connect();
    const out = cmdStatusResult(await client.getCmdStatus({}));
    this.log(statusText(out));
    return out;
  }
}
