#!/usr/bin/env node
// `npm test [-- FILTER...]`: the whole suite on a fresh clone, in one command.
//
//   1. `npm ci` when node_modules is missing;
//   2. the machine's prerequisites (scripts/prerequisites.mjs: redis-server, redis-cli, tmux,
//      Java 17, Maven), installed with apt-get when running as root, otherwise the exact command
//      is printed and this exits 2 before anything runs;
//   3. `npm run build` (always: the tests run the compiled code);
//   4. `node scripts/run-tests.mjs FILTER...` with QIM_JAVA set to the Java 17 found in 2; its
//      exit code is this script's.
import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ensure, ensureNodeModules, step } from "./prerequisites.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const say = (line) => process.stderr.write(`[npm test] ${line}\n`);
const npm = process.platform === "win32" ? "npm.cmd" : "npm";

ensureNodeModules(say);
const env = { ...process.env, ...ensure("test", { say }) };
step(say, "building", npm, ["run", "build"], env);

// Ctrl+C reaches the runner too (same process group): wait for it to stop its servers
const child = spawn(process.execPath, [path.join(root, "scripts", "run-tests.mjs"), ...process.argv.slice(2)], { cwd: root, env, stdio: "inherit" });
for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => {});
child.on("error", (err) => {
  say(`cannot run the tests: ${err.message}`);
  process.exit(1);
});
child.on("exit", (code, signal) => process.exit(code ?? (signal ? 128 + 2 : 1)));
