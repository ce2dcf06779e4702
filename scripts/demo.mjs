#!/usr/bin/env node
// `npm run demo [-- ARGS]`: the demo on a fresh clone, in one command.
//
//   1. `npm ci` when node_modules is missing;
//   2. `npm run build` when the build is missing or older than the sources (the build writes
//      oclif.manifest.json last: its mtime is the build's);
//   3. redis-server: when it is not on PATH, installed with apt-get when running as root,
//      otherwise the exact command is printed and the script exits 2;
//   4. `node bin/qimctl.js demo ARGS` (e.g. `npm run demo -- --output json --down`), whose exit
//      code is the script's.
//
// What this script says goes to stderr, so that `npm run -s demo -- --output json` prints only
// the demo's JSON on stdout.
import { spawn, spawnSync } from "node:child_process";
import { accessSync, constants, existsSync, readdirSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const say = (line) => process.stderr.write(`[npm run demo] ${line}\n`);
const npm = process.platform === "win32" ? "npm.cmd" : "npm";

/** Runs a command with its output on our stderr; exits with its status when it fails. */
function step(what, command, args, env = process.env) {
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

/** The newest mtime (ms) of the files under `rel` (a file or a directory), generated code left out. */
function newest(rel) {
  const full = path.join(root, rel);
  let st;
  try {
    st = statSync(full);
  } catch {
    return 0;
  }
  if (!st.isDirectory()) return st.mtimeMs;
  let max = 0;
  for (const e of readdirSync(full, { withFileTypes: true })) {
    if (e.name === "node_modules" || e.name === "gen" || e.name.startsWith(".")) continue;
    max = Math.max(max, newest(path.join(rel, e.name)));
  }
  return max;
}

function onPath(name) {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (!dir) continue;
    try {
      accessSync(path.join(dir, name), constants.X_OK);
      return true;
    } catch {
      // not here
    }
  }
  return false;
}

// 1. dependencies
if (!existsSync(path.join(root, "node_modules", "@oclif", "core", "package.json"))) {
  step("installing dependencies", npm, ["ci", "--no-audit", "--no-fund"]);
}

// 2. build (tsconfig's inputs, the protos, the Lua scripts, the bins and the package files)
const SOURCES = ["core", "admin-api", "cli", "certs", "test", "bench", "proto", "lua", "bin", "scripts/proto-gen.sh", "package.json", "package-lock.json", "tsconfig.json"];
const marker = path.join(root, "oclif.manifest.json");
const built = existsSync(marker) && existsSync(path.join(root, "dist", "cli", "commands", "demo.js")) ? statSync(marker).mtimeMs : 0;
const sources = Math.max(...SOURCES.map(newest));
if (built === 0) step("building (no build yet)", npm, ["run", "build"]);
else if (sources > built) step("building (sources changed since the last build)", npm, ["run", "build"]);

// 3. redis-server
if (!onPath("redis-server")) {
  const isRoot = typeof process.getuid === "function" && process.getuid() === 0;
  if (!isRoot) {
    say("redis-server is not installed; the demo runs its own private redis-server. Install it with:");
    say("  sudo apt-get install -y redis-server");
    say("(or, as root: apt-get install -y redis-server), then run npm run demo again.");
    process.exit(2);
  }
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  step("installing redis-server (running as root)", "apt-get", ["update"], env);
  step("installing redis-server (running as root)", "apt-get", ["install", "-y", "redis-server"], env);
  if (!onPath("redis-server")) {
    say("redis-server is still not on PATH after apt-get install -y redis-server");
    process.exit(2);
  }
}

// 4. the demo; Ctrl+C reaches it too (same process group): wait for it to wind down
const child = spawn(process.execPath, [path.join(root, "bin", "qimctl.js"), "demo", ...process.argv.slice(2)], { cwd: process.cwd(), stdio: "inherit" });
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => {});
child.on("error", (err) => {
  say(`cannot run qimctl: ${err.message}`);
  process.exit(1);
});
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 128 + 2 : 1)));
