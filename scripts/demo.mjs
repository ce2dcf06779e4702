#!/usr/bin/env node
// `npm run demo [-- ARGS]`: the demo on a fresh clone, in one command.
//
//   1. redis-server: when it is not on PATH, installed with apt-get when running as root,
//      otherwise the exact command is printed and the script exits 2 before anything is written;
//   2. `npm ci` when node_modules is missing;
//   3. `npm run build` when the build is missing or older than the sources (the build writes
//      oclif.manifest.json last: its mtime is the build's);
//   4. `node bin/qimctl.js demo ARGS` (e.g. `npm run demo -- --output json --down`), whose exit
//      code is the script's.
//
// What this script says goes to stderr, so that `npm run -s demo -- --output json` prints only
// the demo's JSON on stdout.
import { existsSync, readdirSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ensure, ensureNodeModules, forward, step as runStep } from "./prerequisites.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const say = (line) => process.stderr.write(`[npm run demo] ${line}\n`);
const step = (...args) => runStep(say, ...args);
const npm = process.platform === "win32" ? "npm.cmd" : "npm";

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

// 1. redis-server (scripts/prerequisites.mjs: apt-get as root, else the command to run and exit 2)
ensure("demo", { say });

// 2. dependencies
ensureNodeModules(say);

// 3. build (tsconfig's inputs, the protos, the Lua scripts, the bins and the package files)
const SOURCES = ["core", "admin-api", "server", "cli", "certs", "test", "bench", "proto", "lua", "bin", "scripts/proto-gen.sh", "package.json", "package-lock.json", "tsconfig.json"];
const marker = path.join(root, "oclif.manifest.json");
const built = existsSync(marker) && existsSync(path.join(root, "dist", "cli", "commands", "demo.js")) ? statSync(marker).mtimeMs : 0;
const sources = Math.max(...SOURCES.map(newest));
if (built === 0) step("building (no build yet)", npm, ["run", "build"]);
else if (sources > built) step("building (sources changed since the last build)", npm, ["run", "build"]);

// 4. the demo
forward(say, [path.join(root, "bin", "qimctl.js"), "demo", ...process.argv.slice(2)]);
