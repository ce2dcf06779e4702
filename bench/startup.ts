/**
 * bench/startup — how long `qimctl` takes to start, against `node -e 0` measured in the same run
 * (the floor: a Node process that loads nothing). Wall time of whole child processes, each case
 * run --runs times in rotation (so that machine noise hits every case alike), the first rotation
 * discarded as warm-up; medians and the ratio to the baseline's median are printed. Then the same
 * for the CPU time each process used (user + system, reported by the child at exit): on a shared,
 * loaded machine wall time also counts waiting for a core, CPU time does not.
 *
 *   version        qimctl --version      (answered by bin/qimctl.js without @oclif/core; target ≤ 2×)
 *   help           qimctl --help         (oclif's execute and help entry points, the manifest)
 *   command help   qimctl group show --help
 *   command        qimctl group show --group not-a-uuid  (loads the command, parses, refuses locally:
 *                  everything a command costs before it connects; exit 2)
 *
 * Usage: node dist/bench/startup.js [--runs N] [--json]   (npm run bench:startup)
 */
import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..");
const QIMCTL = path.join(ROOT, "bin", "qimctl.js");

const args = process.argv.slice(2);
const JSON_OUT = args.includes("--json");
const RUNS = args.includes("--runs") ? Number(args[args.indexOf("--runs") + 1]) : 21;

/** No QIMCTL_* of the developer's: the command case must fail on its flag, not read a context. */
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith("QIMCTL_")));

interface Case {
  name: string;
  argv: string[];
  /** The exit status the case must end with: a case that fails otherwise measures nothing. */
  status: number;
}

const CASES: Case[] = [
  { name: "node -e 0", argv: ["-e", "0"], status: 0 },
  { name: "qimctl --version", argv: [QIMCTL, "--version"], status: 0 },
  { name: "qimctl --help", argv: [QIMCTL, "--help"], status: 0 },
  { name: "qimctl group show --help", argv: [QIMCTL, "group", "show", "--help"], status: 0 },
  { name: "qimctl group show --group not-a-uuid", argv: [QIMCTL, "group", "show", "--group", "not-a-uuid"], status: 2 },
];

/** Loaded first into each child of the CPU rotation: prints the process's CPU time at exit on stderr. */
const CPU_REPORT = `data:text/javascript,import{writeSync}from"node:fs";process.on("exit",()=>{const u=process.cpuUsage();writeSync(2,"\\ncpu-ms "+(u.user+u.system)/1000+"\\n")})`;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** One run of a case: its wall time, or with `cpu` the CPU time it reported. */
function once(c: Case, cpu: boolean): number {
  const start = process.hrtime.bigint();
  const r = spawnSync(process.execPath, cpu ? ["--import", CPU_REPORT, ...c.argv] : c.argv, { cwd: ROOT, env, stdio: ["ignore", "ignore", "pipe"] });
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  if (r.status !== c.status) throw new Error(`${c.name} exited ${String(r.status ?? r.signal)}, expected ${c.status}: ${r.stderr.toString()}`);
  if (!cpu) return ms;
  const reported = /\ncpu-ms ([\d.]+)\n/.exec(r.stderr.toString());
  if (!reported) throw new Error(`${c.name} did not report its CPU time: ${r.stderr.toString()}`);
  return Number(reported[1]);
}

/** Medians per case over RUNS rotations (after one warm-up rotation), and the ratio to the baseline. */
function rotation(cpu: boolean): { case: string; medianMs: number; ratio: number }[] {
  const times = new Map<string, number[]>(CASES.map((c) => [c.name, []]));
  for (let round = 0; round <= RUNS; round++) {
    for (const c of CASES) {
      const ms = once(c, cpu);
      if (round > 0) times.get(c.name)!.push(ms);
    }
  }
  const baseline = median(times.get(CASES[0]!.name)!);
  return CASES.map((c) => {
    const m = median(times.get(c.name)!);
    return { case: c.name, medianMs: +m.toFixed(1), ratio: +(m / baseline).toFixed(2) };
  });
}

function main() {
  const wall = rotation(false);
  const cpu = rotation(true);
  if (JSON_OUT) {
    console.log(JSON.stringify({ runs: RUNS, node: process.version, wall, cpu }, null, 2));
    return;
  }
  console.log(`${RUNS} runs of each, in rotation (medians; ratio to node -e 0 in the same rotation)`);
  console.log(`${"".padEnd(38)} ${"wall".padStart(10)}  ratio ${"CPU".padStart(10)}  ratio`);
  wall.forEach((w, i) => {
    const c = cpu[i]!;
    console.log(`${w.case.padEnd(38)} ${w.medianMs.toFixed(1).padStart(7)} ms  ${w.ratio.toFixed(2).padStart(4)}× ${c.medianMs.toFixed(1).padStart(7)} ms  ${c.ratio.toFixed(2).padStart(4)}×${w.case === "qimctl --version" ? "  (target ≤ 2×)" : ""}`);
  });
}

main();
