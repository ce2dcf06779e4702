import * as Flags from "@oclif/core/flags";
import { dataDirFlag, DevCommand } from "../../dev/command.js";
import { DEFAULT_DEV_DIR, devRestart, MAX_DEV_NODES, stopStartingOnInterrupt, type DevRestartResult } from "../../dev/stack.js";
import { restartLines } from "../../dev/text.js";

export default class DevRestart extends DevCommand<typeof DevRestart> {
  static override summary = "Restart engine servers of the development stack: node N (--node N) or every node, never Redis.";
  static override description = `Stops node dev-N of the stack dev up started (dev up --nodes M: N from 1 to M) — by pid and only while the pid is still that program: SIGTERM, SIGKILL after 10 s — and starts it again with the settings dev up gave it: the same node id, admin API, metrics and CMD sync ports, certificates, log and audit log, on the same Redis. It waits until the node answers the gRPC health check, then records its new pid in <data-dir>/dev.json, so that dev status shows it back and dev down stops it. A restarted node takes its share of units again (its first heartbeat clears a drain).

Without --node every node is restarted, one after the other (dev-1 first); the redis-server is never restarted (dev down and dev up do that).

Exit codes: 0 restarted; 2 --node out of range (the message gives the range), or QIM_CASSANDRA_CONTACT_POINTS set or unset unlike the stack's dev up; 4 another dev up/down/restart is busy with the data dir; 5 the stack is not running or its Redis does not answer, or the node did not answer in time; 1 the node exited during start-up (its log tail is printed) or survived SIGKILL.`;
  static override examples = [
    { description: "Restart node dev-2 of a stack started with dev up --nodes 3", command: "<%= config.bin %> <%= command.id %> --node 2" },
    { description: "Restart every node of the stack in .qim/dev2", command: "<%= config.bin %> <%= command.id %> --data-dir .qim/dev2 --output json" },
  ];
  static override flags = {
    "data-dir": dataDirFlag(DEFAULT_DEV_DIR),
    node: Flags.integer({ min: 1, max: MAX_DEV_NODES, description: "the node to restart: N of dev-N, from 1 to the stack's --nodes (default: every node, one after the other)" }),
  };

  async run(): Promise<DevRestartResult> {
    stopStartingOnInterrupt();
    const r = await devRestart({ dataDir: this.flags["data-dir"], ...(this.flags.node !== undefined ? { node: this.flags.node } : {}), progress: (line) => this.note(line) });
    this.log(restartLines(r));
    return r;
  }
}
