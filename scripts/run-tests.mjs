#!/usr/bin/env node
// Runs the compiled test files (dist/test/**/*.test.js) with the built-in node:test runner.
//
//   node scripts/run-tests.mjs [FILTER...]
//
// FILTERs are substrings matched against each file's path (relative to the repo root); a file
// runs if it matches any of them. The spec reporter streams to the console, a TAP copy goes to a
// temp file whose summary gives the final line "N passed, N failed[, N skipped]".
// Exit status is non-zero if node failed, any test failed/was cancelled, or no test ran.
//
// Cassandra: when a selected file's path contains "cassandra" and QIM_TEST_CASSANDRA is not set,
// ONE single-node Cassandra is started for the whole run (dist/test/harness/cassandra.js; the
// jars are fetched first if not cached) and passed to the tests as QIM_TEST_CASSANDRA=host:port;
// it is stopped once node --test has exited, whatever the outcome. If it cannot start, the run
// fails. (A test file not so named still gets one through sharedCassandra(), per process.)
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const testRoot = path.join(root, "dist", "test");

function findTests(dir) {
  if (!existsSync(dir)) return [];
  const out = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...findTests(full));
    else if (entry.isFile() && entry.name.endsWith(".test.js")) out.push(full);
  }
  return out;
}

const filters = process.argv.slice(2);
const files = findTests(testRoot)
  .map((f) => path.relative(root, f).split(path.sep).join("/"))
  .filter((f) => filters.length === 0 || filters.some((s) => f.includes(s)))
  .sort();

if (files.length === 0) {
  console.log(filters.length ? `no test file under dist/test matches: ${filters.join(" ")}` : "no test file under dist/test");
  console.log("no test ran");
  console.log("0 passed, 0 failed");
  process.exit(1);
}

// Ctrl+C reaches the whole process group; let the child wind down (and its redis-servers with
// it) instead of dying first and leaving it orphaned. Cassandra (detached, own process group)
// is stopped below once the child has exited.
let interrupted = null;
const ignore = (sig) => {
  interrupted ??= sig;
};
process.on("SIGINT", ignore);
process.on("SIGTERM", ignore);

const childEnv = { ...process.env };
let cassandraNode = null;
if (files.some((f) => f.includes("cassandra")) && !process.env.QIM_TEST_CASSANDRA) {
  const started = Date.now();
  try {
    const harness = await import(pathToFileURL(path.join(root, "dist", "test", "harness", "cassandra.js")).href);
    cassandraNode = await harness.startCassandra();
  } catch (err) {
    console.error(`cannot start Cassandra for the tests: ${err instanceof Error ? err.message : String(err)}`);
    console.log("no test ran");
    console.log("0 passed, 0 failed");
    process.exit(1);
  }
  if (interrupted) {
    // Ctrl+C while it was starting: no test run.
    await cassandraNode.stop();
    console.log(`interrupted (${interrupted}) while starting Cassandra`);
    console.log("0 passed, 0 failed");
    process.exit(1);
  }
  childEnv.QIM_TEST_CASSANDRA = cassandraNode.contactPoint;
  console.log(`cassandra ${cassandraNode.version} ready on ${cassandraNode.contactPoint} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

// Files that run alone, after the others: they load the machine so much (three Cassandra JVMs
// starting) that a file beside them measures their load instead of its own code (the large-group
// acceptance's Redis time budget read 230 ms of a script descheduled by the JVMs' start).
// The 10,000-connection test is the same kind of load (20,000 sockets on two cores). Spec 003's C-1
// fills a 100,000-member group and fans a message out to it: beside the large-group acceptance (the
// same size) each measured the other (its small-group send p99 read 2,379 ms once, bound 2,000).
const SOLO = ["test/reliability/three-node-store.test.js", "test/gateway/ten-thousand.test.js", "test/gateway/reactions-c1.test.js"];
const together = files.filter((f) => !SOLO.some((s) => f.endsWith(s)));
if (files.some((f) => f.endsWith("test/gateway/ten-thousand.test.js"))) {
  const hard = spawnSync("/bin/sh", ["-c", "ulimit -Hn"], { encoding: "utf8" }).stdout.trim();
  console.log(`open files: the tests run with the soft limit raised to the hard one (${hard}); the 10,000-connection test needs about 10,256`);
}
const alone = files.filter((f) => SOLO.some((s) => f.endsWith(s)));

const tmp = mkdtempSync(path.join(os.tmpdir(), "qim-tests-"));

/** One `node --test` over `list` at `concurrency`; its TAP report goes to `tapFile`. */
async function runPass(list, concurrency, tapFile) {
  const args = [
    "--test",
    `--test-concurrency=${concurrency}`,
    "--test-reporter=spec",
    "--test-reporter-destination=stdout",
    "--test-reporter=tap",
    `--test-reporter-destination=${tapFile}`,
    ...list,
  ];
  // the soft open-file limit raised to the hard one for the test processes and every server they
  // start (they inherit it): the 10,000-connection test needs about 10,256 in its process and its node
  const child = spawn("/bin/sh", ["-c", 'ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$0" "$@"', process.execPath, ...args], { cwd: root, env: childEnv, stdio: ["ignore", "inherit", "inherit"] });
  return new Promise((resolve) => {
    child.on("error", (err) => {
      console.error(`cannot run node --test: ${err.message}`);
      resolve({ code: 1, signal: null });
    });
    child.on("exit", (code, signal) => resolve({ code, signal }));
  });
}

let code = 0;
let signal = null;
const tapFiles = [];
try {
  for (const [list, concurrency] of [[together, 2], [alone, 1]]) {
    if (list.length === 0 || interrupted) continue;
    const tapFile = path.join(tmp, `report-${tapFiles.length}.tap`);
    tapFiles.push(tapFile);
    const r = await runPass(list, concurrency, tapFile);
    if (r.signal) signal = r.signal;
    if (r.code !== 0) code = r.code ?? 1;
  }
} finally {
  // Graceful (SIGTERM, a few seconds); the harness's 'exit' hook SIGKILLs it should this throw.
  if (cassandraNode) await cassandraNode.stop();
}

const taps = tapFiles.map((f) => {
  try {
    return readFileSync(f, "utf8");
  } catch {
    return ""; // no report (node crashed before writing it)
  }
});
rmSync(tmp, { recursive: true, force: true });

// Top-level TAP summary comments ("# pass 3" at column 0); the last occurrence of each, summed over the passes.
function count(name) {
  const re = new RegExp(`^# ${name} (\\d+)\\s*$`, "gm");
  let total = 0;
  for (const tap of taps) {
    let n = 0;
    for (const m of tap.matchAll(re)) n = Number(m[1]);
    total += n;
  }
  return total;
}
const pass = count("pass");
const fail = count("fail") + count("cancelled");
const skipped = count("skipped");
const todo = count("todo");

// Diagnostics first: the summary is always the last line of the output.
console.log("");
if (todo > 0) console.log(`${todo} todo`);
let status = 0;
if (signal) {
  console.log(`node --test was killed by ${signal}`);
  status = 1;
} else if (code !== 0) {
  if (fail === 0) console.log(`node --test exited with status ${code}`);
  status = 1;
}
if (fail > 0) status = 1;
if (pass + fail === 0) {
  console.log("no test ran");
  status = 1;
}
console.log(`${pass} passed, ${fail} failed${skipped > 0 ? `, ${skipped} skipped` : ""}`);
process.exit(status);
