/**
 * The direction of imports (DESIGN §1, docs/architecture.md "Modules"), checked on the sources:
 * cli → admin-api → core → lua, never upward; a core module reaches another only through its
 * index.ts, and so does everything outside core; the admin client the CLI loads stays free of the
 * engine. Like WuKongIM's TestInternalImportBoundaries: a violation fails with the file and the
 * import named.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path, { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

let ROOT = dirname(fileURLToPath(import.meta.url));
while (!existsSync(join(ROOT, "package.json"))) ROOT = dirname(ROOT);
const LAYERS = ["core", "admin-api", "server", "cli", "certs", "bench", "test"] as const;

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) {
      if (e.name !== "gen" && e.name !== "node_modules") out.push(...sources(rel));
    } else if (/\.(ts|tsx)$/.test(e.name) && !e.name.endsWith(".d.ts")) {
      out.push(rel);
    }
  }
  return out;
}

/** Every relative import of a file, resolved to a path from the project root (".js" as written). */
function importsOf(file: string): string[] {
  const text = readFileSync(join(ROOT, file), "utf8");
  const specs = [...text.matchAll(/(?:from\s+|import\s*\(\s*|^import\s+)["'](\.{1,2}\/[^"']+)["']/gm)].map((m) => m[1]!);
  return specs.map((s) => path.posix.normalize(path.posix.join(path.posix.dirname(file), s)));
}

const FILES = LAYERS.flatMap((l) => sources(l));
const layerOf = (p: string) => p.split("/")[0]!;
const moduleOf = (p: string) => (p.startsWith("core/") && p.split("/").length > 2 ? p.split("/")[1]! : null);

test("the tree has sources in every layer and every core module has its index.ts", () => {
  for (const l of ["core", "admin-api", "server", "cli"]) assert.ok(FILES.some((f) => layerOf(f) === l), l);
  const modules = readdirSync(join(ROOT, "core"), { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
  assert.ok(modules.length >= 7, modules.join(", "));
  for (const m of modules) assert.ok(existsSync(join(ROOT, "core", m, "index.ts")), `core/${m}/index.ts`);
});

test("no layer imports upward: core imports no admin-api/server/cli/certs/bench/test; admin-api (the client) no server/cli/bench/test; server no cli/bench/test; cli no bench/test; bench no cli", () => {
  const forbidden: Record<string, readonly string[]> = {
    core: ["admin-api", "server", "cli", "certs", "bench", "test"],
    "admin-api": ["server", "cli", "bench", "test"],
    server: ["cli", "bench", "test"],
    cli: ["bench", "test"],
    certs: ["cli", "bench", "test"],
    // benchmarks start their servers with the test harness (test/harness/), as the tests do
    bench: ["cli"],
  };
  const violations: string[] = [];
  for (const f of FILES) {
    for (const target of importsOf(f)) {
      if ((forbidden[layerOf(f)] ?? []).includes(layerOf(target))) violations.push(`${f} imports ${target}`);
    }
  }
  assert.deepEqual(violations, []);
});

test("a core module uses another only through its index.ts", () => {
  const violations: string[] = [];
  for (const f of FILES.filter((x) => moduleOf(x))) {
    for (const target of importsOf(f)) {
      const tm = moduleOf(target);
      if (tm && tm !== moduleOf(f) && !target.endsWith(`core/${tm}/index.js`)) violations.push(`${f} imports ${target}`);
      if (target === "core/index.js") violations.push(`${f} imports core/index.js (import the module it needs)`);
    }
  }
  assert.deepEqual(violations, []);
});

test("outside core, the engine is reached through core/index.ts or a module's index.ts", () => {
  const violations: string[] = [];
  for (const f of FILES.filter((x) => layerOf(x) !== "core")) {
    for (const target of importsOf(f)) {
      if (layerOf(target) !== "core") continue;
      if (target !== "core/index.js" && !/^core\/[a-z-]+\/index\.js$/.test(target)) violations.push(`${f} imports ${target}`);
    }
  }
  assert.deepEqual(violations, []);
});

test("the admin client and its catalogue import no engine code (the CLI loads them on every command)", () => {
  const seen = new Set<string>();
  const walk = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const t of importsOf(file)) {
      const ts = t.replace(/\.js$/, ".ts");
      if (existsSync(join(ROOT, ts))) walk(ts);
      else if (existsSync(join(ROOT, t.replace(/\.js$/, ".tsx")))) walk(t.replace(/\.js$/, ".tsx"));
    }
  };
  walk("admin-api/client.ts");
  assert.ok(seen.has("admin-api/catalog.ts"));
  assert.deepEqual([...seen].filter((f) => layerOf(f) === "core"), []);
});
