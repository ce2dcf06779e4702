/**
 * No credential on a command line (issue 26): every process the project starts — the server, the
 * dev stack's redis-server, test children, bench children — gets its passwords by file or
 * environment, because a process's arguments are readable by every user of the machine
 * (/proc/<pid>/cmdline, ps). Checked on the sources: no argument that carries a password itself
 * (redis-server's --requirepass/--masterauth, redis-cli's -a/--pass, a password flag of ours,
 * which the settings refuse anyway: secrets are config file or environment only). The dev stack's
 * running processes are checked by test/dev/secure.test.ts (their /proc/<pid>/cmdline and environ).
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

let ROOT = path.dirname(fileURLToPath(import.meta.url));
while (!readdirSync(ROOT).includes("package.json")) ROOT = path.dirname(ROOT);

const DIRS = ["bin", "cli", "server", "core", "admin-api", "bench", "scripts", "test"];
const FORBIDDEN = /["'`](--requirepass|--masterauth|-a|--pass|--redis-password|--cassandra-password|--password)["'`]/;

function* sources(dir: string): Generator<string> {
  for (const e of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name !== "gen" && e.name !== "node_modules") yield* sources(rel);
    } else if (/\.(ts|tsx|mjs|js|py|sh)$/.test(e.name) && rel !== path.join("test", "layout", "credentials.test.ts")) {
      yield rel;
    }
  }
}

test("no source passes a password as a command-line argument", () => {
  const found: string[] = [];
  let files = 0;
  for (const d of DIRS) {
    for (const f of sources(d)) {
      files++;
      readFileSync(path.join(ROOT, f), "utf8").split("\n").forEach((line, i) => {
        if (FORBIDDEN.test(line)) found.push(`${f}:${i + 1}: ${line.trim().slice(0, 120)}`);
      });
    }
  }
  assert.ok(files > 300, `read the sources (${files} files)`);
  assert.deepEqual(found, []);
});
