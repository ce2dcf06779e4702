/**
 * qimctl's locked output contract (STYLE "Locked output contracts", after Salesforce CLI's
 * command-snapshot.json and schemas/): cli/command-snapshot.json holds every command's id, flags
 * and args (from oclif.manifest.json), whether it is destructive (cli/confirm.ts), and the shape of
 * its JSON result — field names and JSON types, nested — derived from the typed samples each topic
 * exports (test/cli/samples/<topic>.ts, test/cli/result-samples.ts).
 *
 * test/cli/snapshot.test.ts compares the built CLI with the snapshot; test/e2e/qimctl.ts checks
 * every JSON output the end-to-end suites produce against the same shapes, so a sample that drifts
 * from what the command really prints fails too.
 *
 * A shape is "string" | "number" | "boolean" | "null" | "any", several of those joined by "|"
 * ("number|null"), [shape] (an array of them), { field: shape } (an object with exactly these
 * keys), { "$map": shape } (an object keyed by data) or { "$or": [shape, …] } (e.g. null or an
 * object).
 */
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { FREE_FORM, KEYED_BY_DATA, type ResultSamples } from "./result-samples.js";
import type { Destructive } from "../../cli/confirm.js";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "..");
export const SNAPSHOT_FILE = path.join(ROOT, "cli", "command-snapshot.json");
export const UPDATE_COMMAND = "npm run build && QIM_UPDATE_SNAPSHOTS=1 node scripts/run-tests.mjs cli/snapshot";

export type Shape = string | Shape[] | { $or: Shape[] } | { $map: Shape } | { [field: string]: Shape };

export interface FlagContract {
  name: string;
  char: string | null;
  type: "boolean" | "option";
  required: boolean;
  multiple: boolean;
  default: unknown;
  options: string[] | null;
  /** Booleans: whether --no-<name> exists. */
  allowNo: boolean | null;
  env: string | null;
}

export interface ArgContract {
  name: string;
  required: boolean;
  default: unknown;
  options: string[] | null;
}

export interface CommandContract {
  id: string;
  flags: FlagContract[];
  args: ArgContract[];
  destructive: Destructive | null;
  /** "json": one document on stdout; "json-lines": one object per line. */
  output: ResultSamples["output"];
  result: Shape;
  /** Only on a command whose output changes with a flag (ResultSamples.withFlag): by flag name. */
  withFlag?: Record<string, { output: ResultSamples["output"]; result: Shape }>;
}

export interface Snapshot {
  commands: CommandContract[];
}

// ---------------------------------------------------------------------------------------------
// Shapes from samples
// ---------------------------------------------------------------------------------------------

/** A union being built from samples: the primitives seen, at most one object, array and map. */
interface Union {
  any: boolean;
  prims: Set<string>;
  object?: Map<string, Union>;
  /** null: only empty arrays seen so far. */
  array?: Union | null;
  map?: Union | null;
}

const empty = (): Union => ({ any: false, prims: new Set() });

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function fromValue(v: unknown, where: string): Union {
  const u = empty();
  if (v === null) u.prims.add("null");
  else if (typeof v === "string" || typeof v === "number" || typeof v === "boolean") u.prims.add(typeof v);
  else if (Array.isArray(v)) u.array = v.reduce<Union | null>((acc, x, i) => merge(acc, fromValue(x, `${where}[${i}]`), `${where}[]`), null);
  else if (isPlainObject(v) && FREE_FORM.has(v)) u.any = true;
  else if (isPlainObject(v) && KEYED_BY_DATA.has(v)) u.map = Object.values(v).reduce<Union | null>((acc, x) => merge(acc, fromValue(x, `${where}{}`), `${where}{}`), null);
  else if (isPlainObject(v)) u.object = new Map(Object.entries(v).map(([k, x]) => [k, fromValue(x, `${where}.${k}`)]));
  else throw new Error(`${where}: ${typeof v} is not a JSON value`);
  return u;
}

function merge(a: Union | null, b: Union, where: string): Union {
  if (a === null) return b;
  const out: Union = { any: a.any || b.any, prims: new Set([...a.prims, ...b.prims]) };
  if (a.object && b.object) {
    const keys = (o: Map<string, Union>) => [...o.keys()].sort().join(", ");
    // every key of a result is always present (an absent value is null): samples must agree
    if (keys(a.object) !== keys(b.object)) throw new Error(`${where}: samples of one result have different keys: {${keys(a.object)}} and {${keys(b.object)}}`);
    out.object = new Map([...a.object].map(([k, x]) => [k, merge(x, b.object!.get(k)!, `${where}.${k}`)]));
  } else if (a.object ?? b.object) out.object = (a.object ?? b.object)!;
  if (a.array !== undefined && b.array !== undefined) out.array = a.array === null ? b.array : b.array === null ? a.array : merge(a.array, b.array, `${where}[]`);
  else if (a.array !== undefined || b.array !== undefined) out.array = a.array ?? b.array ?? null;
  if (a.map !== undefined && b.map !== undefined) out.map = a.map === null ? b.map : b.map === null ? a.map : merge(a.map, b.map, `${where}{}`);
  else if (a.map !== undefined || b.map !== undefined) out.map = a.map ?? b.map ?? null;
  return out;
}

function toShape(u: Union, where: string): Shape {
  if (u.any) return "any";
  const parts: Shape[] = [];
  const prims = [...u.prims].sort();
  if (prims.length > 0) parts.push(prims.join("|"));
  if (u.object) parts.push(Object.fromEntries([...u.object.keys()].sort().map((k) => [k, toShape(u.object!.get(k)!, `${where}.${k}`)])));
  if (u.array !== undefined) {
    if (u.array === null) throw new Error(`${where}: every sample has an empty array here; give one with an element, so that the snapshot knows what it holds`);
    parts.push([toShape(u.array, `${where}[]`)]);
  }
  if (u.map !== undefined) {
    if (u.map === null) throw new Error(`${where}: every sample has an empty map here; give one with an entry`);
    parts.push({ $map: toShape(u.map, `${where}{}`) });
  }
  if (parts.length === 0) throw new Error(`${where}: no sample`);
  if (parts.length === 1) return parts[0]!;
  // "null" and other primitives first, each alone, then the composite alternatives
  return { $or: [...prims, ...parts.slice(prims.length > 0 ? 1 : 0)] };
}

/** The shape the samples of one result show between them. */
export function shapeOf(values: readonly unknown[], where: string): Shape {
  const u = values.reduce<Union | null>((acc, v, i) => merge(acc, fromValue(v, `${where} sample ${i + 1}`), where), null);
  if (u === null) throw new Error(`${where}: no sample`);
  return toShape(u, where);
}

// ---------------------------------------------------------------------------------------------
// Checking a real output against a shape
// ---------------------------------------------------------------------------------------------

function jsonType(v: unknown): string {
  return v === null ? "null" : Array.isArray(v) ? "array" : typeof v;
}

/** What in `value` does not fit `shape`, as "path: …" lines; empty when it fits. */
export function mismatches(value: unknown, shape: Shape, where = "$"): string[] {
  if (typeof shape === "string") {
    if (shape === "any") return [];
    return shape.split("|").includes(jsonType(value)) ? [] : [`${where}: expected ${shape}, got ${jsonType(value)}`];
  }
  if (Array.isArray(shape)) {
    if (!Array.isArray(value)) return [`${where}: expected an array, got ${jsonType(value)}`];
    return value.flatMap((x, i) => mismatches(x, shape[0]!, `${where}[${i}]`));
  }
  if ("$or" in shape && Array.isArray(shape.$or)) {
    const tries = (shape.$or as Shape[]).map((s) => mismatches(value, s, where));
    return tries.some((t) => t.length === 0) ? [] : tries.reduce((best, t) => (t.length < best.length ? t : best));
  }
  if ("$map" in shape && Object.keys(shape).length === 1) {
    if (!isPlainObject(value)) return [`${where}: expected an object, got ${jsonType(value)}`];
    return Object.entries(value).flatMap(([k, x]) => mismatches(x, (shape as { $map: Shape }).$map, `${where}.${k}`));
  }
  if (!isPlainObject(value)) return [`${where}: expected an object, got ${jsonType(value)}`];
  const fields = shape as Record<string, Shape>;
  return [
    ...Object.keys(fields).filter((k) => !(k in value)).map((k) => `${where}.${k}: missing`),
    ...Object.keys(value).filter((k) => !(k in fields)).map((k) => `${where}.${k}: not in the snapshot`),
    ...Object.keys(fields).filter((k) => k in value).flatMap((k) => mismatches(value[k], fields[k]!, `${where}.${k}`)),
  ];
}

// ---------------------------------------------------------------------------------------------
// The snapshot of the built CLI
// ---------------------------------------------------------------------------------------------

interface ManifestFlag {
  name: string;
  char?: string;
  type: "boolean" | "option";
  required?: boolean;
  multiple?: boolean;
  default?: unknown;
  options?: string[];
  allowNo?: boolean;
  env?: string;
}

interface ManifestCommand {
  id: string;
  flags: Record<string, ManifestFlag>;
  args: Record<string, { name: string; required?: boolean; default?: unknown; options?: string[] }>;
  destructive?: Destructive;
}

/** Every `samples` export under dist/test/cli/samples (one file per topic), by command id. */
async function loadSamples(): Promise<Map<string, { samples: ResultSamples; file: string }>> {
  const out = new Map<string, { samples: ResultSamples; file: string }>();
  const dir = path.join(ROOT, "dist", "test", "cli", "samples");
  for (const file of readdirSync(dir).filter((f) => f.endsWith(".js")).sort().map((f) => path.join(dir, f))) {
    const mod = (await import(pathToFileURL(file).href)) as { samples?: Record<string, ResultSamples> };
    const rel = path.relative(ROOT, file).replace(/^dist\//, "").replace(/\.js$/, ".ts");
    assert.ok(mod.samples, `${rel} exports no \`samples\``);
    for (const [id, s] of Object.entries(mod.samples)) {
      assert.ok(!out.has(id), `samples of "${id}" in both ${out.get(id)?.file} and ${rel}`);
      out.set(id, { samples: s, file: rel });
    }
  }
  return out;
}

/** The contract as the built CLI has it: oclif.manifest.json and the topics' samples. */
export async function currentSnapshot(): Promise<Snapshot> {
  const manifestFile = path.join(ROOT, "oclif.manifest.json");
  assert.ok(existsSync(manifestFile), "oclif.manifest.json is missing: run npm run build first");
  const manifest = JSON.parse(readFileSync(manifestFile, "utf8")) as { commands: Record<string, ManifestCommand> };
  const samples = await loadSamples();
  const ids = Object.values(manifest.commands).map((c) => c.id.replaceAll(":", " "));
  for (const id of samples.keys()) assert.ok(ids.includes(id), `${samples.get(id)!.file} has samples of "${id}", which is not a command`);
  const commands = Object.values(manifest.commands).map((c): CommandContract => {
    const id = c.id.replaceAll(":", " ");
    const s = samples.get(id);
    assert.ok(s, `no samples of the JSON result of "qimctl ${id}": export them from test/cli/samples/<topic>.ts (test/cli/result-samples.ts says how)`);
    return {
      id,
      flags: Object.values(c.flags)
        .map((f) => ({
          name: f.name,
          char: f.char ?? null,
          type: f.type,
          required: f.required === true,
          multiple: f.multiple === true,
          default: f.default ?? null,
          options: f.options ?? null,
          allowNo: f.type === "boolean" ? f.allowNo === true : null,
          env: f.env ?? null,
        }))
        .sort((a, b) => a.name.localeCompare(b.name)),
      args: Object.values(c.args).map((a) => ({ name: a.name, required: a.required === true, default: a.default ?? null, options: a.options ?? null })),
      destructive: c.destructive ?? null,
      output: s.samples.output,
      result: shapeOf(s.samples.values, `${s.file} "${id}"`),
      ...(s.samples.withFlag ? {
        withFlag: Object.fromEntries(Object.entries(s.samples.withFlag).map(([flag, v]) => {
          assert.ok(flag in c.flags, `${s.file} has samples of "${id} --${flag}", which is not a flag of it`);
          return [flag, { output: v.output, result: shapeOf(v.values, `${s.file} "${id} --${flag}"`) }];
        })),
      } : {}),
    };
  });
  return { commands: commands.sort((a, b) => a.id.localeCompare(b.id)) };
}

/** Whether an argv gives the flag (long form, --flag=value, or its char). */
function givesFlag(argv: readonly string[], flag: string, char: string | undefined): boolean {
  for (const a of argv) {
    if (a === "--") return false;
    if (a === `--${flag}` || a.startsWith(`--${flag}=`) || (char !== undefined && /^-[a-zA-Z]+$/.test(a) && a.slice(1).includes(char))) return true;
  }
  return false;
}

export function readSnapshot(): Snapshot {
  return JSON.parse(readFileSync(SNAPSHOT_FILE, "utf8")) as Snapshot;
}

export function snapshotText(s: Snapshot): string {
  return `${JSON.stringify(s, null, 2)}\n`;
}

/** The command an argv runs: the longest run of leading words that is a command id. */
export function commandOf(argv: readonly string[], ids: readonly string[]): string | undefined {
  const words: string[] = [];
  for (const a of argv) {
    if (a.startsWith("-")) break;
    words.push(a);
  }
  for (let n = words.length; n > 0; n--) {
    const id = words.slice(0, n).join(" ");
    if (ids.includes(id)) return id;
  }
  return undefined;
}

let checked: Snapshot | undefined;

/**
 * Checks what one run of qimctl printed on stdout in JSON mode against the snapshot's shape of
 * that command's result; a message saying what differs, or undefined when it fits (or the argv
 * runs no command, e.g. --help).
 */
export function outputMismatch(argv: readonly string[], stdout: string): string | undefined {
  checked ??= readSnapshot();
  const id = commandOf(argv, checked.commands.map((c) => c.id));
  const command = checked.commands.find((x) => x.id === id);
  if (!command || stdout === "") return undefined;
  // a flag that changes what the command prints (CommandContract.withFlag): its shape instead
  const flag = Object.keys(command.withFlag ?? {}).find((f) => givesFlag(argv, f, command.flags.find((x) => x.name === f)?.char ?? undefined));
  const c = flag !== undefined ? { id: `${command.id} --${flag}`, ...command.withFlag![flag]! } : command;
  let docs: unknown[];
  try {
    docs = c.output === "json-lines" ? stdout.split("\n").filter((l) => l !== "").map((l) => JSON.parse(l) as unknown) : [JSON.parse(stdout) as unknown];
  } catch {
    return `qimctl ${c.id} printed something other than ${c.output === "json-lines" ? "JSON lines" : "one JSON document"} on stdout in JSON mode:\n${stdout.slice(0, 2000)}`;
  }
  const problems = docs.flatMap((d) => mismatches(d, c.result));
  if (problems.length === 0) return undefined;
  return [
    `the JSON output of \`qimctl ${argv.join(" ")}\` does not fit its shape in cli/command-snapshot.json:`,
    ...[...new Set(problems)].slice(0, 20).map((p) => `  ${p}`),
    "If the command is right, its declared result type or the samples in test/cli/samples/<topic>.ts are not; if the change is deliberate,",
    `update the samples and the snapshot (${UPDATE_COMMAND}) and docs/operator-guide.md.`,
  ].join("\n");
}
