#!/usr/bin/env node
// `npm test [-- FILTER...]`: the whole suite on a fresh clone, in one command.
//
//   1. the machine's prerequisites (scripts/prerequisites.mjs: redis-server, redis-cli, tmux,
//      Java 17, Maven, Python grpcio and grpc-tools, grpcurl, promtool), installed with apt-get (grpcurl with
//      go install) when running as root, otherwise the exact commands are printed and this exits 2
//      before anything runs;
//   2. `npm ci` when node_modules is missing;
//   3. `npm run build` (always: the tests run the compiled code);
//   4. `node scripts/run-tests.mjs FILTER...` with QIM_JAVA set to the Java 17 found in 1; its
//      exit code is this script's.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ensure, ensureNodeModules, forward, step } from "./prerequisites.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const say = (line) => process.stderr.write(`[npm test] ${line}\n`);
const npm = process.platform === "win32" ? "npm.cmd" : "npm";

// the machine first: a missing prerequisite stops here, before npm ci or a build wrote anything
const env = { ...process.env, ...ensure("test", { say }) };
ensureNodeModules(say);
step(say, "building", npm, ["run", "build"], env);
forward(say, [path.join(root, "scripts", "run-tests.mjs"), ...process.argv.slice(2)], env);
