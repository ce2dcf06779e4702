#!/usr/bin/env node
// What `npm run demo`, `npm test` and `.ci/run` need from the machine beyond Node.js, checked in
// one place, and installed from Debian's packages when missing and allowed.
//
//   node scripts/prerequisites.mjs demo|test
//
// `demo` needs redis-server; `test` also needs redis-cli, tmux (the dashboard's end-to-end test
// drives the TUI on a real pseudo-terminal), Java 17 (Cassandra 5.0 runs on 11/17, not on 21+)
// and Maven (the Cassandra jars are fetched once into ~/.cache/qim-cassandra).
//
// When something is missing: as root, `apt-get install -y` the packages (unless QIM_NO_APT is
// set); otherwise print the exact command and exit 2 with nothing changed. As a module,
// `ensure(need, opts)` returns the env the tests run with (QIM_JAVA, a Java 17 java), and
// `findJava17()` is the one Java lookup (the Cassandra test harness uses it too).
import { spawn, spawnSync } from "node:child_process";
import os from "node:os";
import { accessSync, constants, existsSync, readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const npm = process.platform === "win32" ? "npm.cmd" : "npm";

/** Runs a command in the repo with its output on our stderr; exits with its status when it fails. */
export function step(say, what, command, args, env = process.env) {
  say(`${what}: ${command} ${args.join(" ")}`);
  const r = spawnSync(command, args, { cwd: root, env, stdio: ["inherit", process.stderr, process.stderr] });
  if (r.error) {
    say(`${what} failed: ${r.error.message}`);
    process.exit(1);
  }
  if (r.status !== 0) {
    say(`${what} failed (exit ${r.status ?? r.signal})`);
    process.exit(r.status ?? 1);
  }
}

/**
 * Runs `node ARGS` in the working directory as the last step of a script and exits with its
 * status (128 + the signal number when a signal ended it). Ctrl+C reaches the child too (same
 * process group): this waits for it to wind down instead of dying first.
 */
export function forward(say, args, env = process.env) {
  const child = spawn(process.execPath, args, { cwd: process.cwd(), env, stdio: "inherit" });
  for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => {});
  child.on("error", (err) => {
    say(`cannot run ${args[0]}: ${err.message}`);
    process.exit(1);
  });
  child.on("exit", (code, signal) => process.exit(code ?? (signal ? 128 + (os.constants.signals[signal] ?? 0) : 1)));
}

/** `npm ci` when the dependencies are not installed (a fresh clone). */
export function ensureNodeModules(say) {
  if (!existsSync(path.join(root, "node_modules", "@oclif", "core", "package.json"))) {
    step(say, "installing dependencies", npm, ["ci", "--no-audit", "--no-fund"]);
  }
}

/** The path of `name` when it is an executable on PATH. */
export function onPath(name) {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (!dir) continue;
    try {
      accessSync(path.join(dir, name), constants.X_OK);
      return path.join(dir, name);
    } catch {
      // not here
    }
  }
  return undefined;
}

function javaMajor(java) {
  try {
    const r = spawnSync(java, ["-version"], { encoding: "utf8", timeout: 30_000 });
    const m = /version "(\d+)/.exec(`${r.stderr ?? ""}${r.stdout ?? ""}`);
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

let java17;

/**
 * A Java 17 `java`, or undefined: $QIM_JAVA when set (only that one: a wrong QIM_JAVA is not
 * silently replaced), else `java` on PATH, else a JVM under /usr/lib/jvm (Debian's package;
 * machines often have a newer default beside it). Looked up once per process.
 */
export function findJava17() {
  if (java17 !== undefined) return java17 || undefined;
  const set = process.env.QIM_JAVA?.trim();
  const candidates = set ? [set] : [onPath("java")];
  if (!set) {
    try {
      for (const d of readdirSync("/usr/lib/jvm")) if (/(^|-)17(-|$|\.)/.test(d)) candidates.push(path.join("/usr/lib/jvm", d, "bin", "java"));
    } catch {
      // no /usr/lib/jvm
    }
  }
  java17 = candidates.find((j) => j && javaMajor(j) === 17) ?? "";
  return java17 || undefined;
}

/** Each requirement: how to tell it is there, and the Debian packages that provide it. */
const REQUIREMENTS = {
  "redis-server": { there: () => onPath("redis-server") !== undefined, packages: ["redis-server"] },
  "redis-cli": { there: () => onPath("redis-cli") !== undefined, packages: ["redis-tools"] },
  tmux: { there: () => onPath("tmux") !== undefined, packages: ["tmux"] },
  "java 17": { there: () => findJava17() !== undefined, packages: ["openjdk-17-jre-headless"] },
  maven: { there: () => onPath("mvn") !== undefined, packages: ["maven"] },
};

export const NEEDS = {
  demo: ["redis-server"],
  test: ["redis-server", "redis-cli", "tmux", "java 17", "maven"],
};

/**
 * Checks (and, as root, installs) what `need` requires. Returns the env additions for the run.
 * `say` prints one line; on a missing prerequisite that cannot be installed here it prints the
 * command to run and exits the process with 2.
 */
export function ensure(need, { say = (l) => process.stderr.write(`${l}\n`), install = process.env.QIM_NO_APT === undefined } = {}) {
  const names = NEEDS[need];
  if (!names) throw new Error(`unknown need ${need} (one of ${Object.keys(NEEDS).join(", ")})`);
  let missing = names.filter((n) => !REQUIREMENTS[n].there());
  if (missing.length > 0) {
    const packages = [...new Set(missing.flatMap((n) => REQUIREMENTS[n].packages))];
    const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
    if (!isRoot || !install || onPath("apt-get") === undefined) {
      say(`missing: ${missing.join(", ")}. Install with:`);
      say(`  sudo apt-get update && sudo apt-get install -y ${packages.join(" ")}`);
      say(`(or, as root: apt-get update && apt-get install -y ${packages.join(" ")}), then run this again.`);
      process.exit(2);
    }
    say(`missing: ${missing.join(", ")}; installing ${packages.join(" ")} (running as root)`);
    const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
    for (const args of [["update"], ["install", "-y", ...packages]]) {
      const r = spawnSync("apt-get", args, { env, stdio: ["ignore", process.stderr, process.stderr] });
      if (r.status !== 0) {
        say(`apt-get ${args.join(" ")} failed (exit ${r.status ?? r.signal})`);
        process.exit(r.status ?? 1);
      }
    }
    java17 = undefined; // look again
    missing = names.filter((n) => !REQUIREMENTS[n].there());
    if (missing.length > 0) {
      say(`still missing after apt-get install -y ${packages.join(" ")}: ${missing.join(", ")}`);
      process.exit(2);
    }
  }
  const env = {};
  if (names.includes("java 17")) env.QIM_JAVA = findJava17();
  return env;
}

// as a script (`node scripts/prerequisites.mjs test`, .ci/run): one line per prerequisite found
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const need = process.argv[2];
  if (!need || !NEEDS[need]) {
    process.stderr.write(`usage: node scripts/prerequisites.mjs ${Object.keys(NEEDS).join("|")}\n`);
    process.exit(2);
  }
  const env = ensure(need);
  for (const n of NEEDS[need]) {
    const where = n === "java 17" ? env.QIM_JAVA : onPath(n === "maven" ? "mvn" : n);
    const arg = n === "tmux" ? "-V" : n === "java 17" ? "-version" : "--version";
    const r = spawnSync(where ?? n, [arg], { encoding: "utf8", timeout: 30_000 });
    const version = `${r.stdout ?? ""}${r.stderr ?? ""}`.split("\n")[0].replace(/\x1b\[[0-9;]*m/g, "");
    console.log(`${n}: ${where} ${version}`.trimEnd());
  }
}
