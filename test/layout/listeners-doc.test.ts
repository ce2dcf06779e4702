/**
 * docs/architecture.md lists every listener of the node (issue 25): a folder under
 * server/listeners/ that its "Listeners" section does not name fails here, and so does a name
 * there without its folder.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

let ROOT = dirname(fileURLToPath(import.meta.url));
while (!existsSync(join(ROOT, "package.json"))) ROOT = dirname(ROOT);

/** The text of a `## title` section of a markdown file, up to the next `## `. */
function section(file: string, title: string): string {
  const text = readFileSync(join(ROOT, file), "utf8");
  const start = text.indexOf(`\n## ${title}\n`);
  assert.ok(start >= 0, `${file} has no "## ${title}" section`);
  const end = text.indexOf("\n## ", start + 1);
  return text.slice(start, end < 0 ? undefined : end);
}

test("docs/architecture.md \"Listeners\" names every folder of server/listeners/, and only those", () => {
  const folders = readdirSync(join(ROOT, "server/listeners"), { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name).sort();
  const listed = [...new Set([...section("docs/architecture.md", "Listeners").matchAll(/`server\/listeners\/([a-z0-9-]+)\/`/g)].map((m) => m[1]!))].sort();
  assert.ok(folders.length >= 4, folders.join(", "));
  assert.deepEqual(listed, folders);
});

test("docs/architecture.md \"Adding a listener\" names the files a listener adds and the one list it touches", () => {
  const text = section("docs/architecture.md", "Listeners");
  const adding = text.slice(text.indexOf("### Adding a listener"));
  for (const f of ["server/listeners/<name>/settings.ts", "server/listeners/<name>/index.ts", "server/listeners.ts"]) assert.ok(adding.includes(`\`${f}\``), f);
});
