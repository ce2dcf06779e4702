/**
 * The direction of imports (DESIGN §1, docs/architecture.md "Modules"), checked on the sources:
 * cli → server (the node process) → core → lua and cli → admin-api (the client), never upward;
 * a listener is wired only in its folder and the one list, and a transport adapter does not join
 * engine modules; a core module reaches another only through its
 * index.ts, and so does everything outside core; the admin client the CLI loads stays free of the
 * engine. Like WuKongIM's TestInternalImportBoundaries: a violation fails with the file and the
 * import named.
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path, { dirname, join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import ts from "typescript";

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

/** The value names a file imports from each relative specifier (`import type` and `type X` left out: they carry no code). */
function valueImportsOf(file: string): { target: string; names: string[] }[] {
  const text = readFileSync(join(ROOT, file), "utf8");
  const out: { target: string; names: string[] }[] = [];
  for (const m of text.matchAll(/^import\s+(type\s+)?([^;]*?)\s+from\s+["'](\.{1,2}\/[^"']+)["']/gms)) {
    if (m[1]) continue;
    const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), m[3]!));
    const braces = /\{([^}]*)\}/s.exec(m[2]!)?.[1] ?? "";
    const names = braces.split(",").map((s) => s.trim()).filter((s) => s !== "" && !s.startsWith("type ")).map((s) => s.split(/\s+as\s+/)[0]!);
    out.push({ target, names });
  }
  for (const m of text.matchAll(/import\s*\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g)) {
    out.push({ target: path.posix.normalize(path.posix.join(path.posix.dirname(file), m[1]!)), names: ["*"] });
  }
  return out;
}

const LISTENER_DIR = "server/listeners/";
const listenerOf = (p: string) => (p.startsWith(LISTENER_DIR) ? p.slice(LISTENER_DIR.length).split("/")[0]! : null);
const SHIPPED = FILES.filter((f) => !["test", "bench"].includes(layerOf(f)));

test("a listener is wired only in its folder and in server/listeners.ts (the one list): no other shipped file imports its code", () => {
  const violations: string[] = [];
  for (const f of SHIPPED) {
    if (f === "server/listeners.ts") continue;
    for (const { target, names } of valueImportsOf(f)) {
      const l = listenerOf(target);
      if (l === null || listenerOf(f) === l || names.length === 0) continue;
      violations.push(`${f} imports ${names.join(", ")} from ${target}`);
    }
  }
  assert.deepEqual(violations, []);
});

test("every listener folder is in server/listeners.ts, with its settings.ts and index.ts", () => {
  const folders = readdirSync(join(ROOT, "server/listeners"), { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
  const listed = importsOf("server/listeners.ts").map(listenerOf).filter((l): l is string => l !== null);
  assert.ok(folders.length >= 4, folders.join(", "));
  for (const l of folders) {
    assert.ok(listed.includes(l), `server/listeners/${l}/ is not in server/listeners.ts`);
    assert.ok(existsSync(join(ROOT, "server/listeners", l, "settings.ts")), `server/listeners/${l}/settings.ts`);
    assert.ok(existsSync(join(ROOT, "server/listeners", l, "index.ts")), `server/listeners/${l}/index.ts`);
  }
});

/**
 * Which engine module declares each value core/index.ts exports, by the TypeScript checker (the
 * modules re-export with `export *`, so the file that declares a name is the only sure answer).
 */
function engineModuleOfExports(): Map<string, string> {
  const entry = join(ROOT, "core/index.ts");
  const program = ts.createProgram([entry], { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, noEmit: true, skipLibCheck: true, noResolve: false });
  const checker = program.getTypeChecker();
  const out = new Map<string, string>();
  for (const e of checker.getExportsOfModule(checker.getSymbolAtLocation(program.getSourceFile(entry)!)!)) {
    const target = e.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(e) : e;
    if (!(target.flags & ts.SymbolFlags.Value)) continue;
    const file = target.declarations?.[0]?.getSourceFile().fileName;
    if (file) out.set(e.name, path.relative(ROOT, file).split(path.sep)[1]!);
  }
  return out;
}

/**
 * The engine modules every transport may use together: the shared vocabulary (base: ids, parsing,
 * limits; errors; metrics: the registry; support), the runtime, through which a door reaches
 * the engine, and core/operations, the place where joins live (an adapter that calls an operation
 * and parses its request with one module's helpers joins nothing itself). What the imports of a file show is which engine modules' code it calls by name; a
 * join through the runtime's fields (runtime.sessionView with runtime.conversations) does not show
 * in imports and is not caught here.
 */
const SHARED_ENGINE = new Set(["base", "errors", "metrics", "support", "runtime", "operations"]);

/**
 * Joins found when the rule came in (issue 25), each to move below the adapters with the
 * operations work of that issue; an entry that no longer joins must leave this list.
 */
const KNOWN_JOINS: Readonly<Record<string, string>> = {};

test("a transport adapter (a file under server/listeners/) imports values from at most one engine module besides the shared ones: it does not join modules", () => {
  const moduleOf = engineModuleOfExports();
  assert.ok(moduleOf.get("EngineRuntime") === "runtime" && moduleOf.get("parseUuid") === "base", "the checker maps the engine's exports to their modules");
  const violations: string[] = [];
  for (const f of SHIPPED.filter((x) => listenerOf(x) !== null)) {
    const modules = new Map<string, string[]>();
    for (const { target, names } of valueImportsOf(f)) {
      if (layerOf(target) !== "core") continue;
      for (const n of names) {
        const m = target === "core/index.js" ? moduleOf.get(n) : target.split("/")[1]!;
        if (m && !SHARED_ENGINE.has(m)) modules.set(m, [...(modules.get(m) ?? []), n]);
      }
    }
    const joins = modules.size > 1;
    if (joins && !(f in KNOWN_JOINS)) violations.push(`${f} joins ${[...modules].map(([m, ns]) => `${m} (${ns.join(", ")})`).join(" and ")}`);
    if (!joins && f in KNOWN_JOINS) violations.push(`${f} no longer joins engine modules: remove it from KNOWN_JOINS`);
  }
  for (const f of Object.keys(KNOWN_JOINS)) if (!existsSync(join(ROOT, f))) violations.push(`${f} (KNOWN_JOINS) does not exist: remove it`);
  assert.deepEqual(violations, []);
});
