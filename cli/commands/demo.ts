import { readFileSync } from "node:fs";
import path from "node:path";
import * as Flags from "@oclif/core/flags";
import type { DemoResult, DemoStep } from "../demo/results.js";
import type { DemoWorld } from "../demo/scenario.js";
import { stepsTable } from "../demo/text.js";
import { dataDirFlag, DevCommand, secureRedisFlag } from "../dev/command.js";
import { DEFAULT_DEMO_DIR, devDown, devUp, DevStackError, stopStartingOnInterrupt, type DevUpResult } from "../dev/stack.js";
import { shown, upLines } from "../dev/text.js";
import { EXIT } from "../exit-codes.js";
import { ProgressLine } from "../progress.js";

export default class Demo extends DevCommand<typeof Demo> {
  static override summary = "Start a dev stack and walk a narrated scenario through the real admin API, checking every step.";
  static override description = `Runs \`qimctl dev up\` (the same code) in --data-dir (default .qim/demo, its own stack), then, over mTLS with the dev admin certificate:

- create-group: two groups, team (owner alice; bob, carol) and side (owner bob; alice)
- send-messages: messages take conversation_seq 1, 2, 3 in team
- add-member: dave joins team; the join event takes seq 4
- remove-member: carol is removed (event seq 6); alice then sends seq 7
- history-boundaries: history as each member; dave sees from his join event, carol up to her removal (never seq 7)
- conversation-summaries: conversation lists from the session projection, once GetStatus shows it caught up
- user-sessions: alice's conversation list from the conversation-list engine: side pinned first, unread per conversation, her badge
- bump-epoch: the projection epoch +1 (reason "demo"); alice's next pull is rebuilt from the authority
- rebuild-drill: a rebuild drill over the demo's four users finds no difference; its JSON report goes to <data-dir>/qim-drill-<drillId>.json (dev down --purge removes it)
- dispatch-audit: every dispatch-log partition is OK
- cluster-nodes: the engine's nodes and the units each owns
- cmd-sync: a system command to team's members and one to bob, answered by their offline sync
- devices: alice's phone and laptop and bob's phone connect to the client gateway with device tokens; bob sends, both of alice's devices receive it; alice reads on her phone, her laptop gets READ_SYNC and a new badge, the phone no echo
- bulk-add: 2,500 new users added to a new group from a temporary file in batches of 1,000 (as membership add --from-file), with a progress bar on a terminal; a re-run adds nothing

Each step prints what happened and why it matters, and checks what it should have done; a summary table ends the run. User and group ids are new on every run, so the demo can be repeated on the same stack. The stack keeps running afterwards (stop it with \`qimctl dev down --data-dir .qim/demo\`), or --down stops it at the end.

--secure-redis runs the demo's stack with a production-like Redis (TLS only, ACL user qim, password in <data-dir>/redis.password; see qimctl dev up --help); the scenario is the same. As with dev up, a running demo stack is reused only in the mode asked for.

--output json prints only the summary (steps with name, ok, status, details, error; endpoint; data dir; authority) on stdout; the narration is left out.

Exit codes: 0 every step OK; 1 a step failed (named on stderr; the summary is printed all the same); 2 redis-server not installed (the install command is printed); other dev up failures as \`qimctl dev up\`.`;
  static override examples = [
    "<%= config.bin %> <%= command.id %>",
    "<%= config.bin %> <%= command.id %> --output json --down",
    "<%= config.bin %> <%= command.id %> --secure-redis",
    "npm run demo",
  ];
  static override flags = {
    "data-dir": dataDirFlag(DEFAULT_DEMO_DIR),
    port: Flags.integer({ min: 1, max: 65535, description: "the admin API port of the demo's stack (default: a free one)" }),
    down: Flags.boolean({ description: "stop the dev stack at the end (dev down; its data is kept)" }),
    "secure-redis": secureRedisFlag,
  };

  async run(): Promise<DemoResult> {
    stopStartingOnInterrupt();
    const say = (line: string) => this.log(line);
    const dataDirFlagValue = this.flags["data-dir"];
    const steps: DemoStep[] = [];
    let up: DevUpResult | undefined;
    let world: DemoWorld | undefined;

    say(`qimctl demo: a private dev stack in ${dataDirFlagValue}, then a scenario through the admin API.`);
    try {
      up = await devUp({
        dataDir: dataDirFlagValue,
        contextName: "demo",
        ...(this.flags.port !== undefined ? { port: this.flags.port } : {}),
        secureRedis: this.flags["secure-redis"],
        progress: (l) => this.note(l),
      });
      steps.push({
        name: "dev-up", ok: true, status: "ok",
        details: { status: up.status, endpoint: up.endpoint, redis: up.redis, redisAccess: up.redisAccess, server: { pid: up.server.pid, port: up.server.port }, authority: up.authority },
        error: null,
      });
      say("");
      say("== Dev stack");
      say(upLines(up, DEFAULT_DEMO_DIR, { nextSteps: false }).replace(/^/gm, "   "));
    } catch (err) {
      // redis-server missing or too old: the install hint and exit 2, as dev up
      if (err instanceof DevStackError && err.exitCode === EXIT.USAGE) throw err;
      const message = err instanceof Error ? err.message : String(err);
      steps.push({ name: "dev-up", ok: false, status: "failed", details: {}, error: message });
    }

    if (up) {
      const { connectAdmin } = await import("../../admin-api/client.js");
      const { runScenario } = await import("../demo/scenario.js");
      const client = connectAdmin({
        endpoint: up.endpoint,
        caPem: readFileSync(up.pki.ca),
        certPem: readFileSync(up.pki.cert),
        keyPem: readFileSync(up.pki.key),
        deadlineMs: 30_000,
      });
      try {
        const gateway = up.gatewayUrl ? { url: up.gatewayUrl, ca: readFileSync(up.pki.ca) } : null;
        const r = await runScenario({ client, tenant: up.tenant, reportDir: up.dataDir, gateway, say, progress: new ProgressLine(process.stderr, !this.jsonEnabled()) });
        steps.push(...r.steps);
        world = r.world;
      } finally {
        client.close();
      }
    } else {
      const { DEMO_STEPS } = await import("../demo/scenario.js");
      for (const name of DEMO_STEPS) steps.push({ name, ok: false, status: "skipped", details: {}, error: null });
    }

    let stackRunning = up !== undefined;
    if (this.flags.down) {
      try {
        const down = await devDown({ dataDir: dataDirFlagValue });
        stackRunning = false;
        steps.push({ name: "dev-down", ok: true, status: "ok", details: { stopped: down.stopped, contextsRemoved: down.contextsRemoved }, error: null });
      } catch (err) {
        steps.push({ name: "dev-down", ok: false, status: "failed", details: {}, error: err instanceof Error ? err.message : String(err) });
      }
    }

    const failed = steps.find((s) => s.status === "failed");
    const result: DemoResult = {
      ok: failed === undefined,
      failedStep: failed?.name ?? null,
      endpoint: up?.endpoint ?? null,
      dataDir: up?.dataDir ?? path.resolve(dataDirFlagValue),
      authority: up?.authority ?? null,
      tenant: up?.tenant ?? null,
      users: world?.users ?? null,
      groups: world && world.groups.team ? world.groups : null,
      steps,
      stackRunning,
    };

    say("");
    say("== Summary");
    say(stepsTable(steps).replace(/^/gm, "   "));
    say("");
    const dd = ` --data-dir ${shown(up?.dataDir ?? dataDirFlagValue)}`;
    if (result.ok) say(`All ${steps.length} steps OK.`);
    if (stackRunning && up) {
      // the named context when dev up could write it, else the data dir's context file
      const ctx = up.namedContext.written ? up.namedContext.name : shown(up.context);
      say(`The dev stack keeps running at ${up.endpoint}. Look around with --context ${ctx}, e.g.:`);
      if (world) say(`   qimctl sessions --user ${world.users.alice} --context ${ctx}`);
      if (world?.groups.team) say(`   qimctl history --group ${world.groups.team} --as ${world.users.dave} --context ${ctx}`);
      if (world && up.gatewayUrl) say(`   qimctl client --as ${world.users.alice} --device tablet --context ${ctx}   (alice's new device, live: every frame as it arrives)`);
      say(`Stop it with: qimctl dev down${dd}`);
    }

    if (failed) {
      const stepError = failed.error ?? "failed";
      this.failWithResult(result, { exitCode: EXIT.INTERNAL, code: "DEMO_STEP_FAILED", message: `demo step ${failed.name} failed: ${stepError.split("\n")[0]}` });
    }
    return result;
  }
}
