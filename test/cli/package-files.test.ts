/**
 * What the package ships (package.json "files"): the built engine, admin API and CLI, not the
 * compiled tests. tsconfig compiles test/ into dist/test/ beside them, so "files" names dist/ and
 * then leaves dist/test/ out; the CLI's contract samples (test/cli/samples/) are fixtures and stay
 * with the tests, and nothing the CLI loads at run time imports them (test/layout: cli imports no
 * test code).
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { test } from "node:test";
import { ROOT } from "./contract.js";

test("npm pack ships dist/cli, dist/core and dist/admin-api, and nothing under dist/test/", () => {
  const packed = JSON.parse(execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"], { cwd: ROOT, encoding: "utf8" })) as { files: { path: string }[] }[];
  const files = packed[0]!.files.map((f) => f.path);
  for (const dir of ["dist/cli/commands/", "dist/core/", "dist/admin-api/"]) assert.ok(files.some((f) => f.startsWith(dir)), `the package has no ${dir}`);
  assert.deepEqual(files.filter((f) => f.startsWith("dist/test/")), []);
  assert.deepEqual(files.filter((f) => /samples/.test(f)), [], "contract samples are test fixtures");
});
