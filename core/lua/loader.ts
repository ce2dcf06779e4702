import { readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { InternalError } from "../base/index.js";

/**
 * Lua loading after BullMQ: `lua/<module>/<name>-<numKeys>.lua`, the key count read from the file
 * name (`-n` for a script that takes any number of keys, e.g. one per projected user),
 * `--- @include "includes/x"` lines inlined (each include once, missing or circular ones fail).
 * The list of scripts is the files: a module adds a script by adding its file and declaring it
 * once with `defineScript` (script.ts).
 */

/** Bump when a script's contract changes, so old and new servers never share a command name. */
export const SCRIPT_VERSION = 1;

export interface LoadedScript {
  name: string;
  /** The folder under lua/ the file lives in ("" at the top): the core module it serves. */
  module: string;
  /** lua/-relative path of the file, for messages. */
  file: string;
  command: string;
  /** null: variadic (`-n`), the caller's key list sets the count. */
  numberOfKeys: number | null;
  lua: string;
}

const INCLUDES = "includes";

function findLuaDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    try {
      if (statSync(join(dir, "lua", INCLUDES)).isDirectory()) return join(dir, "lua");
    } catch {
      // not here; look one folder up (core/lua in the sources, dist/core/lua when compiled)
    }
    dir = dirname(dir);
  }
  throw new Error("lua/ folder not found above " + fileURLToPath(import.meta.url));
}

const INCLUDE_RE = /^---\s*@include\s+"([^"]+)"\s*$/gm;

export function inlineIncludes(luaDir: string, source: string, file: string, stack: string[] = [], seen = new Set<string>()): string {
  return source.replace(INCLUDE_RE, (_line, ref: string) => {
    const path = ref.endsWith(".lua") ? ref : `${ref}.lua`;
    if (stack.includes(path)) throw new Error(`circular Lua include ${[...stack, path].join(" -> ")} in ${file}`);
    if (seen.has(path)) return "";
    seen.add(path);
    let text: string;
    try {
      text = readFileSync(join(luaDir, path), "utf8");
    } catch {
      throw new Error(`missing Lua include "${ref}" in ${file}`);
    }
    return inlineIncludes(luaDir, text, path, [...stack, path], seen);
  });
}

/** Every .lua file under `luaDir` except the includes, as lua/-relative paths. */
function scriptFiles(luaDir: string, sub = ""): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(join(luaDir, sub), { withFileTypes: true })) {
    const rel = sub === "" ? entry.name : `${sub}/${entry.name}`;
    if (entry.isDirectory()) {
      if (rel !== INCLUDES) out.push(...scriptFiles(luaDir, rel));
    } else if (entry.name.endsWith(".lua")) {
      out.push(rel);
    }
  }
  return out.sort();
}

let defaultScripts: Map<string, LoadedScript> | undefined;

/** The scripts of this package's lua/ folder, read once. */
export function loadScripts(): Map<string, LoadedScript> {
  defaultScripts ??= loadScriptsFrom(findLuaDir());
  return defaultScripts;
}

export function loadScriptsFrom(luaDir: string): Map<string, LoadedScript> {
  const out = new Map<string, LoadedScript>();
  for (const file of scriptFiles(luaDir)) {
    const base = file.slice(file.lastIndexOf("/") + 1);
    const m = /^([A-Za-z]+)-(\d+|n)\.lua$/.exec(base);
    if (!m) throw new Error(`lua/${file}: a script file is named <name>-<numberOfKeys>.lua or <name>-n.lua (helpers go in lua/includes/)`);
    const name = m[1]!;
    const prior = out.get(name);
    if (prior) throw new Error(`two files define script ${name}: lua/${prior.file} and lua/${file}`);
    const lua = inlineIncludes(luaDir, readFileSync(join(luaDir, file), "utf8"), file);
    const module = file.includes("/") ? relative(".", dirname(file)) : "";
    out.set(name, { name, module, file, command: `qim_v${SCRIPT_VERSION}_${name}`, numberOfKeys: m[2] === "n" ? null : Number(m[2]), lua });
  }
  return out;
}

/** What ioredis clients, pipelines and MULTIs look like to the loader. */
export interface ScriptTarget {
  defineCommand(name: string, definition: { lua: string; numberOfKeys?: number }): void;
}

/**
 * Registers every script of lua/ on a client (RedisStore does this for each client it makes).
 *
 * Then the client's `scriptsSet` is emptied: ioredis (6) copies every entry of it onto each
 * Pipeline and MULTI it makes, in the constructor — about 70 scripts, 140 property writes, for
 * every `multi()` (4 % of a node's CPU in bench/loadgen, where the conversation list reads each
 * touched user's live view in a MULTI). Nothing else reads it; a pipeline finds a script's command
 * on its client instead (invokeScript), the same function the copy would have been.
 */
export function defineScripts(client: ScriptTarget): void {
  for (const s of loadScripts().values()) {
    client.defineCommand(s.command, s.numberOfKeys === null ? { lua: s.lua } : { numberOfKeys: s.numberOfKeys, lua: s.lua });
  }
  const target = client as { scriptsSet?: Record<string, unknown> };
  if (target.scriptsSet !== undefined) target.scriptsSet = {};
}

export function scriptFile(name: string): LoadedScript {
  const s = loadScripts().get(name);
  if (!s) throw new InternalError(`no Lua file defines script ${name} (lua/<module>/${name}-<numberOfKeys>.lua)`);
  return s;
}

/**
 * Calls a defined script command on a client, pipeline or MULTI: checks the key count against the
 * file name; a variadic (`-n`) script gets its key count first.
 */
export function invokeScript<R>(target: object, what: string, name: string, keys: readonly string[], args: readonly (string | number)[]): R {
  const s = scriptFile(name);
  if (s.numberOfKeys !== null && keys.length !== s.numberOfKeys) {
    throw new InternalError(`script ${name} takes ${s.numberOfKeys} keys, called with ${keys.length}`);
  }
  // on a pipeline or MULTI: its client's command (defineScripts), called on the pipeline
  const fn = (target as Record<string, (...a: (string | number)[]) => R>)[s.command]
    ?? (target as { redis?: Record<string, (...a: (string | number)[]) => R> }).redis?.[s.command];
  if (typeof fn !== "function") throw new InternalError(`script ${name} is not defined on this ${what}`);
  const head: (string | number)[] = s.numberOfKeys === null ? [keys.length] : [];
  return fn.apply(target, head.concat(keys, args));
}

/**
 * A script called by name with a KEYS array built by the caller: only for a script's own tests,
 * which exercise its contract key by key. Engine code calls the typed declarations (script.ts).
 */
export async function callScript(client: object, name: string, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown[]> {
  const reply = await invokeScript<Promise<unknown>>(client, "client", name, keys, args);
  return Array.isArray(reply) ? reply : [reply];
}

/** callScript's twin on a pipeline or MULTI (the reply arrives with its exec). */
export function pipelineScript(pipeline: object, name: string, keys: readonly string[], args: readonly (string | number)[]): void {
  invokeScript<unknown>(pipeline, "pipeline", name, keys, args);
}
