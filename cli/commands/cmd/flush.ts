import * as Flags from "@oclif/core/flags";
import { ConnectedCommand } from "../../base.js";
import { cmdFlushResult, type CmdFlushResult } from "../../cmd/results.js";
import { flushText } from "../../cmd/text.js";
import { UsageError } from "../../exit-codes.js";

export default class CmdFlush extends ConnectedCommand<typeof CmdFlush> {
  static override summary = "Flush a node's CMD pending buffer to the durable state now (one bounded flush).";
  static override description = `Every node flushes its pending CMD conversation updates on its own every second in bounded batches; this runs one such flush now, on the answering server or on --node N (reached over the node service). A batch is all or nothing; a failed batch stays pending and the command fails (exit 5) naming the error. Flushing twice is harmless (writes are monotonic merges).

Needs the operator or admin role; audited. Exit codes: 0 flushed; 2 bad --node; 3 no such node; 5 server or node unreachable, or a batch failed (retry); 6 refused certificate or role.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %>",
    { description: "Flush node-2's buffer before draining it", command: "<%= config.bin %> <%= command.id %> --node node-2" },
  ];
  static override flags = {
    node: Flags.string({ char: "n", description: "the node whose buffer to flush (default: the answering server; qimctl cluster nodes lists them)" }),
  };

  async run(): Promise<CmdFlushResult> {
    const nodeId = this.flags.node?.trim() ?? "";
    if (this.flags.node !== undefined && !/^[A-Za-z0-9._-]{1,64}$/.test(nodeId)) throw new UsageError("--node", "a node id is 1–64 of A-Z a-z 0-9 . _ -");
    const { client } = await this.connect();
    const out = cmdFlushResult(await client.cmdFlush({ nodeId }));
    this.log(flushText(out));
    return out;
  }
}
