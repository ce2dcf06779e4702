import { dataDirFlag, DevCommand } from "../../dev/command.js";
import { DEFAULT_DEV_DIR, devStatus, type DevStatusResult } from "../../dev/stack.js";
import { statusLines } from "../../dev/text.js";
import { EXIT } from "../../exit-codes.js";

export default class DevStatus extends DevCommand<typeof DevStatus> {
  static override summary = "Show what of the development stack runs: pids, alive, answering, endpoint, authority.";
  static override description = `Reads <data-dir>/dev.json and checks each process dev up started: its pid is alive and still the same program (alive), and it answers (answering: redis PING — for a stack started with --secure-redis over TLS after AUTH as user qim with <data-dir>/redis.password; each admin server's gRPC health check over mTLS with the dev admin certificate). nodes lists every engine server of the stack (dev up --nodes N) with its node id, pid and admin port. redisAccess says how Redis is reached: secure (TLS only), the ACL user, the TLS port, the password file and the CA — never the password.

Exit codes: 0 everything up and answering; 5 down (no state) or partly down (the result is printed all the same; the error on stderr says what is not up).`;
  static override examples = ["<%= config.bin %> <%= command.id %>", "<%= config.bin %> <%= command.id %> --data-dir .qim/demo --output json"];
  static override flags = { "data-dir": dataDirFlag(DEFAULT_DEV_DIR) };

  async run(): Promise<DevStatusResult> {
    const r = await devStatus(this.flags["data-dir"]);
    if (!this.jsonEnabled()) this.log(statusLines(r, DEFAULT_DEV_DIR));
    if (r.state !== "up") {
      const what = r.state === "down"
        ? "not running (no state file)"
        : [
          ...r.nodes.filter((n) => !n.answering).map((n) => `server ${r.nodes.length > 1 ? `${n.nodeId} ` : ""}pid ${n.pid} ${n.alive ? "does not answer" : "is not running"}`),
          r.redis && !r.redis.answering ? `redis pid ${r.redis.pid} ${r.redis.alive ? "does not answer" : "is not running"}` : null,
          r.strays.length > 0 ? `unrecorded processes ${r.strays.join(", ")}` : null,
        ].filter(Boolean).join(", ");
      this.failWithResult(r, { exitCode: EXIT.CONNECTION, code: r.state === "down" ? "DEV_STACK_DOWN" : "DEV_STACK_PARTIAL", message: `the dev stack in ${r.dataDir} is ${r.state}: ${what}` });
    }
    return r;
  }
}
