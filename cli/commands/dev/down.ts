import path from "node:path";
import * as Flags from "@oclif/core/flags";
import { yesFlag, type Destructive } from "../../confirm.js";
import { dataDirFlag, DevCommand } from "../../dev/command.js";
import { DEFAULT_DEV_DIR, devDown, type DevDownResult } from "../../dev/stack.js";
import { downLines } from "../../dev/text.js";

export default class DevDown extends DevCommand<typeof DevDown> {
  static override summary = "Stop the development stack that dev up started (by pid), keeping its data unless --purge.";
  static override description = `Stops only what dev up started in --data-dir, by pid and only while the pid is still that program: the admin server (SIGTERM, SIGKILL after 10 s), then redis-server (SIGTERM: it finishes its AOF; SIGKILL after 10 s). Checks that they are gone, removes <data-dir>/dev.json, and removes the default context file only if it is the one this stack wrote. The Redis data, the PKI, the logs, <data-dir>/context.json and (after dev up --secure-redis) the Redis password <data-dir>/redis.password are kept (the next dev up reuses them) unless --purge.

Idempotent: when nothing runs it says so and exits 0.

--purge deletes data, so on a terminal it asks first; --yes skips the question. When stdin is NOT a terminal there is never a prompt, and --purge needs --yes (else exit 2, nothing stopped or removed). Without --purge nothing is asked: the next dev up starts on the same data.

Exit codes: 0 stopped, or nothing was running; 2 --purge without --yes and without a terminal; 4 another dev up/down is busy with the data dir; 1 a process survived SIGKILL; 130 not confirmed.`;
  static override examples = ["<%= config.bin %> <%= command.id %>", "<%= config.bin %> <%= command.id %> --data-dir .qim/demo --purge --yes"];
  static override flags = {
    "data-dir": dataDirFlag(DEFAULT_DEV_DIR),
    purge: Flags.boolean({ description: "also remove the Redis data, PKI, logs and contexts of the data dir" }),
    yes: yesFlag,
  };
  static override destructive: Destructive = { action: "purge the dev stack's data", onlyWith: "purge" };

  async run(): Promise<DevDownResult> {
    await this.askFirst(`Stop the dev stack in ${path.resolve(this.flags["data-dir"])} and remove its Redis data, PKI, logs and contexts? [y/N] `);
    const r = await devDown({ dataDir: this.flags["data-dir"], purge: this.flags.purge });
    this.log(downLines(r));
    return r;
  }
}
