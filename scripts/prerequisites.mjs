#!/usr/bin/env node
// What `npm run demo`, `npm test` and `.ci/run` need from the machine beyond Node.js, checked in
// one place, and installed from Debian's packages when missing and allowed.
//
//   node scripts/prerequisites.mjs demo|test
//
// `demo` needs redis-server; `test` also needs redis-cli, tmux (the dashboard's end-to-end test
// drives the TUI on a real pseudo-terminal), Java 17 (Cassandra 5.0 runs on 11/17, not on 21+),
// Maven (the Cassandra jars are fetched once into ~/.cache/qim-cassandra), and the third-party
// gRPC clients of test/interop/: Debian's python3-grpcio and python3-grpc-tools (for Debian's own
// /usr/bin/python3) and grpcurl, built with `go install` at a pinned version into
// ~/.cache/qim-tools/ (Go itself is not installed here: Debian's is too old for grpcurl), and
// promtool (Debian's prometheus package; test/monitoring/ checks and unit-tests the alert rules of
// docs/monitoring/ with it), installed without the package's recommendations (node-exporter).
//
// When something is missing: as root, `apt-get install -y` the packages and `go install` the Go
// tools (unless QIM_NO_APT is set); otherwise print the exact commands and exit 2 with nothing
// changed. As a module, `ensure(need, opts)` returns the env the tests run with (QIM_JAVA, a Java
// 17 java); `findJava17()` is the one Java lookup (the Cassandra test harness uses it too), and
// `findGrpcurl()` and DEBIAN_PYTHON are where the interop tests find their clients.
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

/** Debian's Python: python3-grpcio and python3-grpc-tools are importable there, not from a pyenv python3 on PATH. */
export const DEBIAN_PYTHON = "/usr/bin/python3";

function debianPythonImports(module) {
  const r = spawnSync(DEBIAN_PYTHON, ["-c", `import ${module}`], { stdio: "ignore", timeout: 30_000 });
  return r.status === 0;
}

/** grpcurl, pinned: the version the interop tests were written against. */
const GRPCURL = { package: "github.com/fullstorydev/grpcurl/cmd/grpcurl", version: "v1.9.3", binary: "grpcurl", envVar: "QIM_GRPCURL" };
/** Go tools go into a folder of their own per version, so that finding the binary proves its version. */
const toolDir = (tool) => path.join(os.homedir(), ".cache", "qim-tools", `${tool.binary}-${tool.version}`);

/**
 * The grpcurl of the interop tests: $QIM_GRPCURL when set (only that one), else the pinned one
 * that this script installs; undefined when absent.
 */
export function findGrpcurl() {
  const set = process.env[GRPCURL.envVar]?.trim();
  const candidate = set || path.join(toolDir(GRPCURL), GRPCURL.binary);
  try {
    accessSync(candidate, constants.X_OK);
    return candidate;
  } catch {
    return undefined;
  }
}

/** Go (≥ 1.21 for grpcurl): on PATH, else where Go's own archive installs it. */
function findGo() {
  const standard = "/usr/local/go/bin/go";
  return onPath("go") ?? (existsSync(standard) ? standard : undefined);
}

/**
 * Each requirement: how to tell it is there, and either the Debian packages that provide it
 * (installed without their recommendations when `noRecommends`) or the Go tool that `go install` builds.
 */
const REQUIREMENTS = {
  "redis-server": { there: () => onPath("redis-server") !== undefined, packages: ["redis-server"] },
  "redis-cli": { there: () => onPath("redis-cli") !== undefined, packages: ["redis-tools"] },
  tmux: { there: () => onPath("tmux") !== undefined, packages: ["tmux"] },
  "java 17": { there: () => findJava17() !== undefined, packages: ["openjdk-17-jre-headless"] },
  maven: { there: () => onPath("mvn") !== undefined, packages: ["maven"] },
  "python3-grpcio": { there: () => debianPythonImports("grpc"), packages: ["python3-grpcio"] },
  "python3-grpc-tools": { there: () => debianPythonImports("grpc_tools.protoc"), packages: ["python3-grpc-tools"] },
  // the client gateway's interop client (test/interop/gateway_client.py): a WebSocket library nobody here wrote
  "python3-websockets": { there: () => debianPythonImports("websockets"), packages: ["python3-websockets"] },
  grpcurl: { there: () => findGrpcurl() !== undefined, go: GRPCURL },
  // the package is the Prometheus server with promtool beside it; its recommendation, node-exporter, is not needed
  promtool: { there: () => onPath("promtool") !== undefined, packages: ["prometheus"], noRecommends: true },
};

export const NEEDS = {
  demo: ["redis-server"],
  test: ["redis-server", "redis-cli", "tmux", "java 17", "maven", "python3-grpcio", "python3-grpc-tools", "python3-websockets", "grpcurl", "promtool"],
};

/** The `go install` of a tool, as this script runs it and as it tells a user to. */
function goInstall(tool) {
  return { env: { GOBIN: toolDir(tool) }, args: ["install", `${tool.package}@${tool.version}`] };
}

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
    const packages = [...new Set(missing.flatMap((n) => REQUIREMENTS[n].packages ?? []))];
    // one `apt-get install` for the packages taken with their recommendations, one for those without
    const installs = [false, true].flatMap((bare) => {
      const these = [...new Set(missing.filter((n) => (REQUIREMENTS[n].noRecommends === true) === bare).flatMap((n) => REQUIREMENTS[n].packages ?? []))];
      return these.length === 0 ? [] : [["install", "-y", ...(bare ? ["--no-install-recommends"] : []), ...these]];
    });
    const aptLine = (sudo) => [["update"], ...installs].map((args) => `${sudo}apt-get ${args.join(" ")}`).join(" && ");
    const tools = missing.map((n) => REQUIREMENTS[n].go).filter((t) => t !== undefined);
    const go = findGo();
    const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
    const canApt = packages.length === 0 || onPath("apt-get") !== undefined;
    // a tool named by its variable is that one only: installing ours would not change the answer
    const overridden = tools.filter((t) => process.env[t.envVar]?.trim());
    if (!isRoot || !install || !canApt || (tools.length > 0 && go === undefined) || overridden.length > 0) {
      say(`missing: ${missing.join(", ")}. Install with:`);
      if (packages.length > 0) say(`  ${aptLine("sudo ")}`);
      for (const tool of tools) {
        const { env, args } = goInstall(tool);
        say(`  ${Object.entries(env).map(([k, v]) => `${k}=${v}`).join(" ")} ${go ?? "go"} ${args.join(" ")}`);
      }
      for (const t of overridden) say(`  (${t.envVar}=${process.env[t.envVar]} is not an executable ${t.binary}: fix it, or unset it to use the one installed above)`);
      if (tools.length > 0 && go === undefined) say(`  (${tools.map((t) => t.binary).join(", ")}: Go 1.21 or newer first; no go on PATH nor at /usr/local/go/bin/go)`);
      if (packages.length > 0) say(`(or, as root: ${aptLine("")}), then run this again.`);
      else say("then run this again.");
      process.exit(2);
    }
    say(`missing: ${missing.join(", ")}; installing ${[...packages, ...tools.map((t) => `${t.binary}@${t.version}`)].join(" ")} (running as root)`);
    const run = (command, args, env) => {
      const r = spawnSync(command, args, { env, stdio: ["ignore", process.stderr, process.stderr] });
      if (r.status !== 0) {
        say(`${command} ${args.join(" ")} failed (exit ${r.status ?? r.signal})`);
        process.exit(r.status ?? 1);
      }
    };
    if (packages.length > 0) {
      const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
      for (const args of [["update"], ...installs]) run("apt-get", args, env);
    }
    for (const tool of tools) {
      const { env, args } = goInstall(tool);
      run(go, args, { ...process.env, ...env });
    }
    java17 = undefined; // look again
    missing = names.filter((n) => !REQUIREMENTS[n].there());
    if (missing.length > 0) {
      say(`still missing after installing: ${missing.join(", ")}`);
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
  // what to run to show each one's version (default: NAME --version from PATH)
  const shown = {
    tmux: [onPath("tmux"), ["-V"]],
    "java 17": [env.QIM_JAVA, ["-version"]],
    maven: [onPath("mvn"), ["--version"]],
    "python3-grpcio": [DEBIAN_PYTHON, ["-c", "import grpc; print('grpcio', grpc.__version__)"]],
    "python3-grpc-tools": [DEBIAN_PYTHON, ["-m", "grpc_tools.protoc", "--version"]],
    "python3-websockets": [DEBIAN_PYTHON, ["-c", "import websockets; print('websockets', websockets.__version__)"]],
  };
  for (const n of NEEDS[need]) {
    if (n === "grpcurl") {
      // a `go install` build says "dev build" to -version: its folder names the pinned version
      console.log(`grpcurl: ${findGrpcurl()} ${process.env[GRPCURL.envVar]?.trim() ? `(${GRPCURL.envVar})` : GRPCURL.version}`);
      continue;
    }
    const [where, args] = shown[n] ?? [onPath(n), ["--version"]];
    const r = spawnSync(where ?? n, args, { encoding: "utf8", timeout: 30_000 });
    const version = `${r.stdout ?? ""}${r.stderr ?? ""}`.split("\n")[0].replace(/\x1b\[[0-9;]*m/g, "");
    console.log(`${n}: ${where} ${version}`.trimEnd());
  }
}
