import os from "node:os";
import path from "node:path";
import * as Flags from "@oclif/core/flags";
import type { DrillProgress } from "../../../admin-api/client.js";
import { ConnectedCommand } from "../../base.js";
import { yesFlag, type Destructive } from "../../confirm.js";
import { EXIT, UsageError } from "../../exit-codes.js";
import { drillJUnit } from "../../drill/junit.js";
import { drillReportResult, type DrillRunResult } from "../../drill/results.js";
import { differencesMessage, differencesText, drillText } from "../../drill/text.js";
import { junitXml } from "../../junit.js";
import { devDataDirOf, drillReportName, stateReportsDir, writableDir, writableFile, writeFileWhole } from "../../output-files.js";
import { LIMITS, reason as checkReason, uuidList } from "../../validate.js";

const WIPES = ["projection", "checkpoints", "both"] as const;
const DEFAULT_SAMPLE = 100;

export default class DrillRebuild extends ConnectedCommand<typeof DrillRebuild> {
  static override summary = "Run a rebuild drill: wipe the session projection, bump the epoch, rebuild, and compare every sampled user.";
  static override description = `What CI runs to prove the conversation-set authority can rebuild the session projection. The server catches the projection up and flushes pending registrations to the authority, records each user's conversation set with the head and the definitional unread of every conversation, wipes what --wipe says, bumps the epoch, lets each user's list be rebuilt on its pull, and compares field by field (presence, unread, unreadExact, headConversationSeq, lastActivityId). It then compares each user's conversation list with the definition: the cached unread, unreadExact and mentions of every row (listUnread, listUnreadExact, listMentions, listPresence: before = cached, after = definitional) and the stored badge against the sums over the definitional rows (badgeTotalUnread, badgeTotalMention, badgeMutedUnread; no conversation).

Users: --sample N draws N users at random from the projection (default ${DEFAULT_SAMPLE}); or name them with --user (repeatable, in the --tenant of the connection). --wipe projection (default) drops those users' projection; checkpoints drops every partition's checkpoint (the consumer re-reads the retained log); both does both.

The JSON report is always written, ok or not: to --report FILE, or as qim-drill-<drillId>.json into --report-dir DIR (created if missing). By default that directory is $XDG_STATE_HOME/qimctl/reports (~/.local/state/qimctl/reports), or the dev stack's data dir when the connection comes from the context \`qimctl dev up\` wrote; never the working directory. Table mode prints a summary and every difference (user, conversation, field, before, after); --output json prints the report (plus reportPath). Progress goes to stderr as one updating line when stderr is a terminal, nothing otherwise.

CI: --junit FILE also writes JUnit XML, ok or not: one <testsuite> with the drill id, wipe mode, epochs and authority as properties, one <testcase> per user checked (classname drill-rebuild.<tenant>, name the user), and one <failure> per difference, naming the conversation and the field with expected (before the wipe) and actual (after the rebuild).

Run it on a quiet system: messages arriving during the drill change unread counts and show up as differences. One drill at a time per server. Needs the drill or admin role; audited with the drill id and its result.

Confirmation: the drill wipes and rebuilds, so on a terminal it asks first; --yes skips the question. When stdin is NOT a terminal (CI) there is never a prompt, and the drill needs --yes (else exit 2, nothing changed).

Exit codes: 0 the drill found no difference; 4 differences found (the report names each user, conversation and field), or another drill is running; 2 bad flags (--sample out of 1..${LIMITS.drillUsers}, --sample with --user, unknown --wipe, --report with --report-dir, a --report, --report-dir or --junit that cannot be written, no --yes without a terminal); 5 server unreachable or silent for --timeout seconds; 6 refused certificate or role; 130 not confirmed.`;
  static override examples = [
    {
      description: "CI: a drill certificate, 50 random users, JSON report, exit code decides",
      command: "<%= config.bin %> <%= command.id %> --sample 50 --reason \"nightly drill\" --report drill.json --yes --output json",
    },
    {
      description: "CI: JUnit XML for the CI system's test view, the JSON report kept as an artifact",
      command: "<%= config.bin %> <%= command.id %> --sample 200 --junit drill-junit.xml --report-dir artifacts --yes",
    },
    {
      description: "Two named users, wiping their projection and every checkpoint",
      command: "<%= config.bin %> <%= command.id %> --tenant 8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c --user 0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b --user 9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d --wipe both",
    },
  ];
  static override flags = {
    sample: Flags.integer({ min: 1, max: LIMITS.drillUsers, description: `users drawn at random from the projection (default ${DEFAULT_SAMPLE}; not with --user)` }),
    user: Flags.string({ char: "u", multiple: true, delimiter: ",", description: `user UUID in the connection's --tenant; repeat or separate with commas (at most ${LIMITS.drillUsers})` }),
    wipe: Flags.option({ options: WIPES, default: "projection" as const, description: "what to wipe before the rebuild" })(),
    reason: Flags.string({ char: "r", description: `why (at most ${LIMITS.reasonChars} characters); recorded with the epoch bump` }),
    report: Flags.string({ description: "write the JSON report to this file (not with --report-dir)" }),
    "report-dir": Flags.string({ description: "write the JSON report as qim-drill-<drillId>.json into this directory, created if missing (default $XDG_STATE_HOME/qimctl/reports, or the dev stack's data dir)" }),
    junit: Flags.string({ description: "also write JUnit XML to this file: a test case per user, a failure per difference" }),
    yes: yesFlag,
  };
  static override destructive: Destructive = { action: "run a rebuild drill (it wipes and rebuilds the session projection)" };

  async run(): Promise<DrillRunResult> {
    const f = this.flags;
    if (f.sample !== undefined && f.user !== undefined) throw new UsageError("--sample", "give --sample or --user, not both");
    const users = f.user !== undefined ? uuidList("--user", f.user, LIMITS.drillUsers) : [];
    const tenant = users.length > 0 ? this.tenant() : undefined;
    const reason = checkReason("--reason", f.reason, false);
    if (f.report !== undefined && f["report-dir"] !== undefined) throw new UsageError("--report-dir", "give --report FILE or --report-dir DIR, not both");
    const reportFile = f.report !== undefined ? writableFile("--report", f.report) : undefined;
    const reportDir = reportFile !== undefined ? undefined
      : f["report-dir"] !== undefined ? { dir: writableDir("--report-dir", f["report-dir"]) }
        : this.defaultReportDir();
    const junitFile = f.junit !== undefined ? writableFile("--junit", f.junit) : undefined;
    const { client, endpoint } = await this.connect();
    const who = users.length > 0 ? `${users.length} named user(s)` : `${f.sample ?? DEFAULT_SAMPLE} user(s) drawn at random`;
    const wiped = f.wipe === "projection" ? "their session projection" : f.wipe === "checkpoints" ? "every partition's checkpoint" : "their session projection and every partition's checkpoint";
    await this.askFirst(`Run a rebuild drill over ${who}: wipe ${wiped}, bump the epoch and rebuild? [y/N] `);

    const live = process.stderr.isTTY === true;
    const onProgress = live
      ? (p: DrillProgress) => process.stderr.write(`\r\x1b[2K${`[${p.phase} ${p.done}/${p.total}] ${p.message}`.slice(0, Math.max(20, (process.stderr.columns || 120) - 1))}`)
      : undefined;
    let raw;
    try {
      raw = await client.runRebuildDrill({
        users: tenant ? users.map((user) => ({ tenant, user })) : [],
        ...(users.length === 0 ? { sample: f.sample ?? DEFAULT_SAMPLE } : {}),
        wipe: f.wipe,
        reason: reason ?? "",
      }, onProgress);
    } finally {
      if (live) process.stderr.write("\r\x1b[2K");
    }
    const report = drillReportResult(raw);
    const reportPath = reportFile ?? path.join(reportDir!.dir, drillReportName(report.drillId));
    writeFileWhole(reportPath, `${JSON.stringify(report, null, 2)}\n`, reportDir?.mode);
    const out: DrillRunResult = { ...report, reportPath };
    if (junitFile !== undefined) writeFileWhole(junitFile, junitXml(drillJUnit(out, endpoint)));

    this.log(drillText(out, junitFile));
    if (!out.ok) {
      this.log("");
      this.log(differencesText(out));
      this.failWithResult(out, { exitCode: EXIT.CONFLICT, code: "DRILL_DIFFERENCES", message: differencesMessage(out) });
    }
    return out;
  }

  /** The dev stack's data dir when connected through its context, else the XDG state dir (0700 when created: reports name users). */
  private defaultReportDir(): { dir: string; mode?: number } {
    const dev = devDataDirOf(this.connectionSettings());
    try {
      return dev !== null ? { dir: writableDir("--report-dir", dev) } : { dir: writableDir("--report-dir", stateReportsDir(process.env, os.homedir())), mode: 0o700 };
    } catch (err) {
      if (err instanceof UsageError) throw new UsageError("--report-dir", `${err.message.slice("--report-dir: ".length)} (the default report directory); give --report-dir DIR or --report FILE`);
      throw err;
    }
  }
}
