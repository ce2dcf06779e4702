/**
 * The alert rules of docs/monitoring/ as CI checks them: `promtool check rules` on the rules file
 * and `promtool test rules` on its unit tests (synthetic series, docs/monitoring/qim-alerts.test.yml),
 * both as child processes of the promtool that scripts/prerequisites.mjs installs (Debian's
 * prometheus package). promtool missing is a failure, not a skip. Also: every rule carries what
 * an operator needs (a `for:`, a severity, a summary, a description naming a qimctl command), and
 * every alert is tested both firing and quiet.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";
import { parse } from "yaml";
import { ROOT } from "../e2e/qimctl.js";

const DIR = path.join(ROOT, "docs", "monitoring");
const RULES = path.join(DIR, "qim-alerts.yml");
const TESTS = path.join(DIR, "qim-alerts.test.yml");

interface Ran {
  code: number;
  out: string;
}

function promtool(args: string[], cwd: string): Promise<Ran> {
  return new Promise((resolve, reject) => {
    execFile("promtool", args, { cwd, timeout: 60_000 }, (err, stdout, stderr) => {
      const e = err as (NodeJS.ErrnoException & { code?: number | string }) | null;
      if (e?.code === "ENOENT") {
        reject(new Error("promtool is not on PATH: run `node scripts/prerequisites.mjs test` (it installs Debian's prometheus package)"));
        return;
      }
      resolve({ code: e ? (typeof e.code === "number" ? e.code : -1) : 0, out: `${stdout}${stderr}` });
    });
  });
}

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

const rules = (parse(readFileSync(RULES, "utf8")) as { groups: { name: string; rules: Rule[] }[] }).groups.flatMap((g) => g.rules);

describe("docs/monitoring alert rules", () => {
  const tmp = mkdtempSync(path.join(os.tmpdir(), "qim-rules-"));
  after(() => rmSync(tmp, { recursive: true, force: true }));

  it("promtool check rules: the file is valid and holds every alert", async () => {
    const r = await promtool(["check", "rules", RULES], DIR);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, new RegExp(`SUCCESS: ${rules.length} rules found`));
    assert.deepEqual(rules.map((x) => x.alert), [
      "QimPartitionRefused", "QimPartitionNotOk", "QimCheckpointLagHigh", "QimProjectionEpochBumped", "QimUnreadDriftHigh",
      "QimRegistrationFailing", "QimRegistrationDeadLetters", "QimAuditWriteFailing", "QimAuditRotationFailing", "QimStoreUnreachable",
      "QimCmdPendingFileBad", "QimRetentionFallingBehind", "QimNodeOpenFilesNearLimit",
    ]);
  });

  it("promtool test rules: each alert fires when it should and not when it should not", async () => {
    const r = await promtool(["test", "rules", TESTS], DIR);
    assert.equal(r.code, 0, r.out);
    assert.match(r.out, /SUCCESS/);
    // every alert is expected both firing and quiet somewhere in the unit tests
    const tests = (parse(readFileSync(TESTS, "utf8")) as { tests: { alert_rule_test: { alertname: string; exp_alerts: unknown[] }[] }[] }).tests
      .flatMap((t) => t.alert_rule_test);
    for (const { alert } of rules) {
      assert.ok(tests.some((t) => t.alertname === alert && t.exp_alerts.length > 0), `${alert} is tested firing`);
      assert.ok(tests.some((t) => t.alertname === alert && t.exp_alerts.length === 0), `${alert} is tested quiet`);
    }
  });

  it("the unit tests catch a changed rule: a lag threshold of 30000 fails them", async () => {
    copyFileSync(TESTS, path.join(tmp, "qim-alerts.test.yml"));
    writeFileSync(path.join(tmp, "qim-alerts.yml"), readFileSync(RULES, "utf8").replace("(qim_session_projection_checkpoint_lag) > 10000", "(qim_session_projection_checkpoint_lag) > 30000"));
    const r = await promtool(["test", "rules", "qim-alerts.test.yml"], tmp);
    assert.notEqual(r.code, 0, r.out);
    assert.match(r.out, /FAILED:[\s\S]*alertname: QimCheckpointLagHigh, time: 10m/);
  });

  it("every rule has a for:, a severity, a summary and a description that names what to run", () => {
    for (const r of rules) {
      assert.match(r.for ?? "", /^\d+[smh]$/, `${r.alert}: for`);
      assert.ok(["critical", "warning"].includes(r.labels?.severity ?? ""), `${r.alert}: severity ${r.labels?.severity}`);
      assert.ok((r.annotations?.summary ?? "").length > 0, `${r.alert}: summary`);
      assert.match(r.annotations?.description ?? "", /`(qimctl|redis-cli) [a-z]/, `${r.alert}: description names a command`);
    }
  });
});
