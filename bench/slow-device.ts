/**
 * bench/slow-device — "a slow device never slows others (measured)" (issue 27, back-pressure): one
 * real qim-node with its gateway, one group of M members all online, an open-loop send rate R of
 * P-byte payloads for S seconds; in alternate rounds K of the members stop reading their socket
 * (the node's push budget must stop writing to them: one RESYNC past the soft mark, a close past
 * the hard one). Printed per round and as medians: deliveries/s per reading device, end-to-end
 * p50/p99 and the checker's verdict over them, how many slow devices passed the soft mark (the
 * node's counter), the node's VmRSS after the round; the end-to-end p99 of the rounds with slow
 * devices against those without (goal: not worse beyond noise).
 * Usage: node dist/bench/slow-device.js [--members M] [--slow K] [--rate R] [--payload P] [--duration S] [--rounds N] [--output json]
 */
import { flag } from "./args.js";
import { runLoad, rssBytes, startTarget, type LoadReport } from "./loadgen/index.js";

const argv = process.argv.slice(2);
const JSON_OUT = argv.includes("--output") && argv[argv.indexOf("--output") + 1] === "json";
const MEMBERS = flag("--members", 20);
const SLOW = flag("--slow", 5);
const RATE = flag("--rate", 200);
const PAYLOAD = flag("--payload", 8192);
const DURATION = flag("--duration", 15);
const ROUNDS = flag("--rounds", 2);
for (const [k, v] of Object.entries({ MEMBERS, SLOW, RATE, PAYLOAD, DURATION, ROUNDS })) {
  if (!Number.isFinite(v) || v < 1 || (k === "SLOW" && v > MEMBERS - 2)) {
    process.stderr.write(`invalid --${k.toLowerCase()}: ${v} (positive; --slow at most --members − 2)\n`);
    process.exit(2);
  }
}
const say = (line: string) => process.stderr.write(`${line}\n`);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** deliveriesPerSec: per reading device (the rounds with slow devices have fewer of them). */
interface Round { slow: number; deliveriesPerSec: number; p50: number; p99: number; checker: boolean; slowClosed: number; softMarks: number; rssMiB: number }
const rounds: Round[] = [];
const t = await startTarget();
/** The node's counter of connections past a push mark (soft: RESYNC and pushes held; hard: closed 4429). */
async function marks(): Promise<{ soft: number; hard: number }> {
  const text = t.node.metricsUrl ? await (await fetch(t.node.metricsUrl)).text() : "";
  const of = (mark: string) => Number(new RegExp(`^qim_gateway_back_pressure_total\\{mark="${mark}"\\} (\\S+)$`, "m").exec(text)?.[1] ?? 0);
  return { soft: of("soft"), hard: of("hard") };
}
try {
  for (let r = 0; r < ROUNDS; r++) {
    for (const slow of [0, SLOW]) {
      const before = await marks();
      const { report }: { report: LoadReport } = await runLoad(t, { devices: MEMBERS, groups: 1, members: MEMBERS, rate: RATE, durationS: DURATION, churn: 0, payloadBytes: PAYLOAD, slow, log: () => {} });
      const x: Round = {
        slow, deliveriesPerSec: Math.round(report.deliveries / (MEMBERS - slow) / DURATION), p50: report.endToEndMs.p50, p99: report.endToEndMs.p99,
        checker: report.verdict.ok, slowClosed: report.slowDevices.closed, softMarks: (await marks()).soft - before.soft, rssMiB: +(rssBytes(t.node.pid) / 2 ** 20).toFixed(1),
      };
      rounds.push(x);
      say(`round ${r + 1}, ${slow} slow: ${x.deliveriesPerSec} deliveries/s per reading device, end to end p50 ${x.p50} ms p99 ${x.p99} ms, checker ${x.checker ? "PASS" : "FAIL"}, slow devices past the soft mark ${x.softMarks}, closed ${x.slowClosed}, node RSS ${x.rssMiB} MiB`);
    }
  }
} finally {
  await t.stop();
}
const of = (slow: number, f: (r: Round) => number) => median(rounds.filter((r) => r.slow === slow).map(f));
const out = {
  members: MEMBERS, slow: SLOW, rate: RATE, payloadBytes: PAYLOAD, durationS: DURATION, rounds,
  baseline: { deliveriesPerSec: of(0, (r) => r.deliveriesPerSec), p50: of(0, (r) => r.p50), p99: of(0, (r) => r.p99) },
  withSlow: { deliveriesPerSec: of(SLOW, (r) => r.deliveriesPerSec), p50: of(SLOW, (r) => r.p50), p99: of(SLOW, (r) => r.p99) },
  checkerPassed: rounds.every((r) => r.checker),
};
// the rate is open loop (every reading device is due the same deliveries/s): what a slow device could
// spoil is how late they arrive, and whether they all do (the checker)
const ratio = +(out.withSlow.p99 / out.baseline.p99).toFixed(3);
if (JSON_OUT) process.stdout.write(`${JSON.stringify({ ...out, endToEndP99Ratio: ratio })}\n`);
else {
  process.stdout.write(`${MEMBERS} members online, ${RATE} msg/s of ${PAYLOAD} B for ${DURATION} s, medians of ${ROUNDS} rounds each\n`);
  process.stdout.write(`  no slow device:  ${out.baseline.deliveriesPerSec} deliveries/s per device, end to end p50 ${out.baseline.p50} ms p99 ${out.baseline.p99} ms\n`);
  process.stdout.write(`  ${SLOW} slow devices: ${out.withSlow.deliveriesPerSec} deliveries/s per reading device, end to end p50 ${out.withSlow.p50} ms p99 ${out.withSlow.p99} ms\n`);
  process.stdout.write(`  end to end p99 with slow devices / without: ${ratio}× (goal ≤ 1 within noise); checker ${out.checkerPassed ? "PASS" : "FAIL"} in every round\n`);
}
process.exit(out.checkerPassed ? 0 : 1);
