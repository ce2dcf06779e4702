#!/usr/bin/env node
// Runs the compiled test files (dist/test/**/*.test.js) with the built-in node:test runner.
//
//   node scripts/run-tests.mjs [FILTER...]
//
// FILTERs are substrings matched against each file's path (relative to the repo root); a file
// runs if it matches any of them. The spec reporter streams to the console, a TAP copy goes to a
// temp file whose summary gives the final line "N passed, N failed[, N skipped]".
// Exit status is non-zero if node failed, any test failed/was cancelled, or no test ran.
import { spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync, existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

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

const tmp = mkdtempSync(path.join(os.tmpdir(), "qim-tests-"));
const tapFile = path.join(tmp, "report.tap");
const args = [
  "--test",
  "--test-concurrency=2",
  "--test-reporter=spec",
  "--test-reporter-destination=stdout",
  "--test-reporter=tap",
  `--test-reporter-destination=${tapFile}`,
  ...files,
];

// Ctrl+C reaches the whole process group; let the child wind down (and its redis-servers with
// it) instead of dying first and leaving it orphaned.
const ignore = () => {};
process.on("SIGINT", ignore);
process.on("SIGTERM", ignore);

const child = spawn(process.execPath, args, { cwd: root, stdio: ["ignore", "inherit", "inherit"] });
const { code, signal } = await new Promise((resolve) => {
  child.on("error", (err) => {
    console.error(`cannot run node --test: ${err.message}`);
    resolve({ code: 1, signal: null });
  });
  child.on("exit", (code, signal) => resolve({ code, signal }));
});

let tap = "";
try {
  tap = readFileSync(tapFile, "utf8");
} catch {
  // no report (node crashed before writing it)
}
rmSync(tmp, { recursive: true, force: true });

// Top-level TAP summary comments ("# pass 3" at column 0); take the last occurrence of each.
function count(name) {
  const re = new RegExp(`^# ${name} (\\d+)\\s*$`, "gm");
  let n = 0;
  for (const m of tap.matchAll(re)) n = Number(m[1]);
  return n;
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
