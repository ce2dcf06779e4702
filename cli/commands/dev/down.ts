import { Flags } from "@oclif/core";
import { dataDirFlag, DevCommand } from "../../dev/command.js";
import { DEFAULT_DEV_DIR, devDown, type DevDownResult } from "../../dev/stack.js";
import { downLines } from "../../dev/text.js";

export default class DevDown extends DevCommand<typeof DevDown> {
  static override summary = "Stop the development stack that dev up started (by pid), keeping its data unless --purge.";
  static override description = `Stops only what dev up started in --data-dir, by pid and only while the pid is still that program: the admin server (SIGTERM, SIGKILL after 10 s), then redis-server (SIGTERM: it finishes its AOF; SIGKILL after 10 s). Checks that they are gone, removes <data-dir>/dev.json, and removes the default context file only if it is the one this stack wrote. The Redis data, the PKI, the logs and <data-dir>/context.json are kept (the next dev up reuses them) unless --purge.

Idempotent: when nothing runs it says so and exits 0.

Exit codes: 0 stopped, or nothing was running; 4 another dev up/down is busy with the data dir; 1 a process survived SIGKILL.`;
  static override examples = ["<%= config.bin %> <%= command.id %>", "<%= config.bin %> <%= command.id %> --data-dir .qim/demo --purge"];
  static override flags = {
    "data-dir": dataDirFlag(DEFAULT_DEV_DIR),
    purge: Flags.boolean({ description: "also remove the Redis data, PKI, logs and contexts of the data dir" }),
  };

  async run(): Promise<DevDownResult> {
    const r = await devDown({ dataDir: this.flags["data-dir"], purge: this.flags.purge });
    this.log(downLines(r));
    return r;
  }
}
