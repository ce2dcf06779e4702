/**
 * docs/monitoring/grafana-qim.json (the Grafana board) and the alert rules query only metrics the
 * server exports: the exported names come from a real `qim-admin-server` process's /metrics,
 * scraped over HTTP, and each PromQL query's metric names are read out of its text. The board is
 * valid JSON in the shape Grafana imports (unique ids, panels on its 24-column grid, every query on
 * the board's data source variable) and covers what the dashboards are for.
 */
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { parse } from "yaml";
import { writeTestPki } from "../certs/fixture.js";
import { ROOT } from "../e2e/qimctl.js";
import { startRedis, type RedisServer } from "../harness/redis.js";
import { startServerProcess, type ServerProcess } from "../reliability/server-process.js";
import { scrape } from "./exposition.js";

const BOARD = path.join(ROOT, "docs", "monitoring", "grafana-qim.json");
const RULES = path.join(ROOT, "docs", "monitoring", "qim-alerts.yml");

const KEYWORDS = new Set(["and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "offset", "bool", "inf", "nan"]);

/**
 * The metric names a PromQL expression selects: what is left once strings, label matchers, range
 * and subquery brackets, grouping clauses, function and aggregation calls, keywords and Grafana
 * variables are taken out.
 */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""')
    .replace(/\{[^}]*\}/g, " ")
    .replace(/\[[^\]]*\]/g, " ")
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ");
  const names = new Set<string>();
  for (const m of bare.matchAll(/(\$?)\b([a-zA-Z_:][a-zA-Z0-9_:]*)\b(\s*\()?/g)) {
    const [, dollar, name, call] = m;
    if (dollar || call || KEYWORDS.has(name!.toLowerCase())) continue;
    // a number's exponent or a duration (1e3, 5m) starts with a digit and never matches here
    names.add(name!);
  }
  return [...names].sort();
}

interface Target {
  expr: string;
  refId: string;
  datasource?: { uid?: string };
}
interface Panel {
  id: number;
  type: string;
  title: string;
  gridPos: { h: number; w: number; x: number; y: number };
  datasource?: { type?: string; uid?: string };
  targets?: Target[];
  panels?: Panel[];
}

const board = JSON.parse(readFileSync(BOARD, "utf8")) as { title: string; uid: string; panels: Panel[]; templating: { list: { name: string; type: string; definition?: string }[] } };
const allPanels = board.panels.flatMap((p) => [p, ...(p.panels ?? [])]);
const queries = allPanels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })));
const ruleExprs = (parse(readFileSync(RULES, "utf8")) as { groups: { rules: { alert: string; expr: string }[] }[] }).groups
  .flatMap((g) => g.rules).map((r) => ({ alert: r.alert, expr: r.expr }));

describe("metric names in PromQL (the reader the checks below use)", () => {
  it("takes the selected metrics, not functions, labels, durations, grouping or variables", () => {
    assert.deepEqual(metricNames('sum by (op) (rate(qim_writer_membership_events_total{job=~"$job"}[$__rate_interval]))'), ["qim_writer_membership_events_total"]);
    assert.deepEqual(metricNames('count(max by (partition) (a_metric{verdict!="OK"}) == 1) or vector(0)'), ["a_metric"]);
    assert.deepEqual(metricNames("max by (job) (max_over_time(e[15m]) - min_over_time(e[15m])) > 0"), ["e"]);
    assert.deepEqual(metricNames('histogram_quantile(0.99, sum by (le) (rate(h_bucket{a="x{y}"}[5m])))'), ["h_bucket"]);
    assert.deepEqual(metricNames("x / on (instance) group_left (addr) y offset 1h > bool 1e3"), ["x", "y"]);
  });
});

describe("Grafana board and alert rules against a real server's /metrics", { timeout: 120_000 }, () => {
  let dir: string;
  let redis: RedisServer;
  let server: ServerProcess;
  let exported: Set<string>;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), "qim-grafana-"));
    const pki = await writeTestPki(path.join(dir, "pki"));
    redis = await startRedis();
    server = await startServerProcess({ redisAddr: redis.addr, pki, auditLog: path.join(dir, "audit.log"), metricsListen: "127.0.0.1:0" });
    exported = (await scrape(server.metricsUrl!)).names;
  });

  after(async () => {
    await server?.stop();
    await redis?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("the scrape names the engine's metrics (the set the checks compare against)", () => {
    for (const n of ["qim_writer_membership_events_total", "qim_session_projection_checkpoint_lag", "qim_store_reachable", "qim_admin_audit_write_failures_total", "qim_writer_commit_batch_size_bucket"]) {
      assert.ok(exported.has(n), `${n} in ${[...exported].join(" ")}`);
    }
  });

  it("every query of the board and its job variable uses only exported metric names", () => {
    assert.ok(queries.length >= 20, `${queries.length} queries`);
    for (const q of queries) {
      const names = metricNames(q.expr);
      assert.ok(names.length > 0, `${q.panel}: ${q.expr} selects no metric`);
      for (const n of names) assert.ok(exported.has(n), `${q.panel}: ${n} is not exported by the server (${q.expr})`);
    }
    const job = board.templating.list.find((v) => v.name === "job")!;
    const m = /^label_values\((\w+), job\)$/.exec(job.definition ?? "");
    assert.ok(m && exported.has(m[1]!), `job variable: ${job.definition}`);
  });

  it("every alert rule uses only exported metric names", () => {
    for (const r of ruleExprs) {
      const names = metricNames(r.expr);
      assert.ok(names.length > 0, r.alert);
      for (const n of names) assert.ok(exported.has(n), `${r.alert}: ${n} is not exported by the server (${r.expr})`);
    }
  });
});

describe("the Grafana board's shape", () => {
  it("unique panel ids, panels within the 24-column grid, every query on the data source variable with its refId", () => {
    assert.equal(board.uid, "qim-engine");
    const ids = allPanels.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length, "unique ids");
    assert.ok(board.templating.list.some((v) => v.name === "datasource" && v.type === "datasource"));
    for (const p of allPanels) {
      assert.ok(p.title.length > 0, `panel ${p.id} has a title`);
      assert.ok(p.gridPos.x >= 0 && p.gridPos.w > 0 && p.gridPos.x + p.gridPos.w <= 24 && p.gridPos.h > 0, `${p.title}: gridPos ${JSON.stringify(p.gridPos)}`);
      if (p.type === "row") continue;
      assert.equal(p.datasource?.uid, "${datasource}", `${p.title}: data source`);
      assert.ok((p.targets ?? []).length > 0, `${p.title}: queries`);
      const refIds = p.targets!.map((t) => t.refId);
      assert.equal(new Set(refIds).size, refIds.length, `${p.title}: unique refIds`);
      for (const t of p.targets!) {
        assert.equal(t.datasource?.uid, "${datasource}", `${p.title} ${t.refId}: data source`);
        assert.match(t.expr, /job=~"\$job"/, `${p.title} ${t.refId}: filtered by the job variable`);
      }
    }
  });

  it("covers membership events, messages, dispatch, lag per partition, the registration queue, the epoch and the audit log", () => {
    const used = new Set(queries.flatMap((q) => metricNames(q.expr)));
    for (const n of [
      "qim_writer_membership_events_total", "qim_writer_messages_committed_total", "qim_relay_dispatched_total",
      "qim_session_projection_checkpoint_lag", "qim_session_projection_partition_verdict", "qim_session_conversation_state_queue_depth",
      "qim_session_conversation_state_dead_letter_queue_depth", "qim_session_projection_epoch", "qim_admin_audit_write_failures_total", "qim_store_reachable",
    ]) assert.ok(used.has(n), `the board shows ${n}`);
    assert.ok(queries.some((q) => /max by \(partition\) \(qim_session_projection_checkpoint_lag/.test(q.expr)), "lag per partition");
  });
});
