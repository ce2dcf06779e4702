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

--purge stops the stack first (as without it), then removes everything the stack wrote in the data dir and nothing else: the Redis data (AOF/RDB), the PKI, the logs (server, Redis, audit, rotated audit logs), the nodes' state dirs, the Redis password and ACL files, context.json, the drill reports written there (drill rebuild through this stack's context, and the demo's: qim-drill-*.json) — then the data dir itself when nothing else is in it — and the named contexts dev up wrote for this data dir (each is marked with it). removed lists what went.

--dry-run changes nothing and asks nothing: it lists the processes it would stop (how: would stop) and, with --purge, the contexts and files it would remove.

--purge deletes data, so on a terminal it asks first; --yes skips the question. When stdin is NOT a terminal there is never a prompt, and --purge needs --yes (else exit 2, nothing stopped or removed). Without --purge nothing is asked: the next dev up starts on the same data.

Exit codes: 0 stopped, or nothing was running, or (--dry-run) the plan printed; 2 --purge without --yes and without a terminal; 4 another dev up/down is busy with the data dir; 1 a process survived SIGKILL; 130 not confirmed.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %>",
    "<%= config.bin %> <%= command.id %> --data-dir .qim/demo --purge --yes",
    { description: "What a purge would stop and remove, changing nothing", command: "<%= config.bin %> <%= command.id %> --data-dir .qim/dev2 --purge --dry-run" },
  ];
  static override flags = {
    "data-dir": dataDirFlag(DEFAULT_DEV_DIR),
    purge: Flags.boolean({ description: "also remove what the stack wrote: Redis data, PKI, logs, drill reports in the data dir, and its contexts" }),
    "dry-run": Flags.boolean({ description: "change nothing: list what would be stopped and (with --purge) removed" }),
    yes: yesFlag,
  };
  static override destructive: Destructive = { action: "purge the dev stack's data", onlyWith: "purge", exceptWith: "dry-run" };

  async run(): Promise<DevDownResult> {
    await this.askFirst(`Stop the dev stack in ${path.resolve(this.flags["data-dir"])} and remove its Redis data, PKI, logs and contexts? [y/N] `);
    const r = await devDown({ dataDir: this.flags["data-dir"], purge: this.flags.purge, dryRun: this.flags["dry-run"] });
    this.log(downLines(r));
    return r;
  }
}
