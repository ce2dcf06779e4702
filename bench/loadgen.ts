/**
 * qim-loadgen (issue 27): starts a private redis-server and a real qim-node with its client gateway on
 * loopback, drives it with the load generator (bench/loadgen/run.ts) and prints SEND_ACK and end-to-end
 * p50/p99 and the independent checker's verdict; exits 1 when the checker fails.
 * Usage: node dist/bench/loadgen.js --devices N --groups G --members M --rate R --duration S [--churn C] [--payload BYTES] [--output json]
 *        node dist/bench/loadgen.js --search [--from R0] [--steps K] [--duration S (default 60)] --devices N --groups G --members M
 *   --search: spec 000's figure, the highest rate whose window of S seconds holds SEND_ACK p99 ≤ 30 ms
 *   and end-to-end p99 ≤ 122 ms with the checker passing (bench/loadgen/search.ts); exit 0 when
 *   some rate held.
 *   --worker-node: a second node process on this host takes the relay and the dispatch partitions
 *   (`--cluster-units relay,partition`); the devices' node keeps the user slots (two cores' worth of
 *   node where one process had one).
 * N devices need about N + 256 open files here and in the node (`ulimit -n`); it says so when the limit is lower.
 */
import { flag } from "./args.js";
import { runLoad, searchMaxRate, startTarget, ensureOpenFiles, validateLoad, SPEC000_RATE, type LoadReport, type SearchReport } from "./loadgen/index.js";

const argv = process.argv.slice(2);
const JSON_OUT = argv[argv.indexOf("--output") + 1] === "json" && argv.includes("--output");
const SEARCH = argv.includes("--search");
const WORKER = argv.includes("--worker-node");
const o = {
  devices: flag("--devices", 100), groups: flag("--groups", 10), members: flag("--members", 10),
  rate: flag("--rate", 100), durationS: flag("--duration", SEARCH ? 60 : 10), churn: flag("--churn", 0), payloadBytes: flag("--payload", 64),
  from: flag("--from", 25), steps: flag("--steps", 6),
};
for (const [k, v] of Object.entries(o)) {
  if (!Number.isFinite(v) || v < 0 || (k !== "churn" && v === 0)) {
    process.stderr.write(`invalid --${k === "durationS" ? "duration" : k === "payloadBytes" ? "payload" : k}: ${v} (a ${k === "churn" ? "non-negative" : "positive"} number)\n`);
    process.exit(2);
  }
}
const say = (line: string) => process.stderr.write(`${line}\n`);

function print(r: LoadReport): void {
  const v = r.verdict;
  const lines = [
    `devices ${r.options.devices}, groups ${r.options.groups} × ${r.options.members} members, ${r.options.rate} msg/s for ${r.options.durationS} s, churn ${r.options.churn}/s`,
    `sent ${r.sent}, acked ${r.acked}, failed ${r.failed}, skipped ${r.skipped} (device at its in-flight cap or out of the group); leaves ${r.leaves}, re-adds ${r.rejoins}; deliveries ${r.deliveries}`,
    `SEND_ACK p50 ${r.sendAckMs.p50} ms, p99 ${r.sendAckMs.p99} ms; end to end p50 ${r.endToEndMs.p50} ms, p99 ${r.endToEndMs.p99} ms`,
    `checker: ${v.ok ? "PASS" : "FAIL"} — arrival ${v.arrived}/${v.expected} (${(v.arrivalRate * 100).toFixed(3)} %), duplicates ${v.duplicates}, missing ${v.missing.count}, past a leave ${v.afterLeave.count}, order inversions ${v.inversions.count}, orphans ${v.orphans.count}`,
  ];
  if (r.errors.length > 0) lines.push(`  errors: ${r.errors.join("; ")}`);
  for (const [name, x] of [["missing", v.missing], ["past a leave", v.afterLeave], ["inversions", v.inversions], ["orphans", v.orphans]] as const) {
    if (x.count > 0) lines.push(`  ${name}: ${x.samples.join("; ")}`);
  }
  process.stdout.write(`${lines.join("\n")}\n`);
}

function printSearch(r: SearchReport): void {
  const lines = [`spec 000's figure: the highest open-loop rate holding SEND_ACK p99 ≤ ${r.bounds.sendAckP99Ms} ms and end to end p99 ≤ ${r.bounds.endToEndP99Ms} ms for ${r.options.durationS} s (devices ${r.options.devices}, groups ${r.options.groups} × ${r.options.members})`];
  for (const s of r.steps) lines.push(`  ${String(s.rate).padStart(6)} msg/s  ${s.held ? "held        " : "did not hold"}  SEND_ACK p99 ${s.sendAckP99Ms} ms, end to end p99 ${s.endToEndP99Ms} ms, ${s.acked} acked, ${s.deliveries} deliveries${s.why.length > 0 ? ` — ${s.why.join("; ")}` : ""}`);
  lines.push(`highest rate that held: ${r.highestHeld} msg/s${r.lowestFailed !== null ? ` (lowest that did not: ${r.lowestFailed})` : " (every window held)"}; ${(r.ofSpecRate * 100).toFixed(2)} % of the spec's ${SPEC000_RATE} msg/s on its hardware`);
  process.stdout.write(`${lines.join("\n")}\n`);
}

try {
  if (SEARCH && (!(o.from >= 1) || !(o.steps >= 1))) throw new Error("--from and --steps are positive numbers");
  validateLoad(o);
  await ensureOpenFiles(o.devices);
} catch (err) {
  say(String((err as Error).message));
  process.exit(2);
}
if (WORKER) say("two node processes: the devices' node (user slots) and a worker (relay buckets, dispatch partitions)");
const target = await startTarget({ worker: WORKER });
if (SEARCH) {
  let found: SearchReport;
  try {
    found = await searchMaxRate(target, { ...o, maxSteps: o.steps, log: say });
  } finally {
    await target.stop();
  }
  if (JSON_OUT) process.stdout.write(`${JSON.stringify(found)}\n`);
  else printSearch(found);
  process.exit(found.highestHeld > 0 ? 0 : 1);
}
let report: LoadReport;
try {
  report = (await runLoad(target, { ...o, log: say })).report;
} finally {
  await target.stop();
}
if (JSON_OUT) process.stdout.write(`${JSON.stringify(report)}\n`);
else print(report);
process.exit(report.verdict.ok ? 0 : 1);
