import { readFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ChainableCommander, Cluster, Redis } from "ioredis";
import { InternalError } from "./errors.js";

/**
 * Lua loading after BullMQ: `lua/<name>-<numKeys>.lua`, the key count read from the file name
 * (`-n` for a script that takes any number of keys, e.g. one per projected user),
 * `--- @include "includes/x"` lines inlined (each include once, missing or circular ones fail),
 * registered with `defineCommand` under a versioned name, and called only through `callScript`.
 */

/** Bump when a script's contract changes, so old and new servers never share a command name. */
export const SCRIPT_VERSION = 1;

export const SCRIPT_NAMES = [
  "createGroup",
  "commitMessages",
  "applyMembership",
  "readPlan",
  "loadForDispatch",
  "markCommitted",
  "readHistory",
  "conversationSummary",
  "markRead",
  "projectEntries",
  "popRegistered",
  "deadLetterRegistration",
  "advanceCheckpoint",
  "bumpEpoch",
  "raiseEpochMark",
  "releaseLock",
] as const;
export type ScriptName = (typeof SCRIPT_NAMES)[number];

export interface LoadedScript {
  name: ScriptName;
  command: string;
  /** null: variadic (`-n`), the caller's key list sets the count. */
  numberOfKeys: number | null;
  lua: string;
}

export type RedisClient = Redis | Cluster;

function findLuaDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    try {
      if (readdirSync(join(dir, "lua")).some((f) => f.endsWith(".lua"))) return join(dir, "lua");
    } catch {
      // not here; look one folder up (core/ in the sources, dist/core/ when compiled)
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

let defaultScripts: Map<ScriptName, LoadedScript> | undefined;

export function loadScripts(): Map<ScriptName, LoadedScript> {
  defaultScripts ??= loadScriptsFrom(findLuaDir());
  return defaultScripts;
}

export function loadScriptsFrom(luaDir: string): Map<ScriptName, LoadedScript> {
  const out = new Map<ScriptName, LoadedScript>();
  for (const file of readdirSync(luaDir)) {
    if (!file.endsWith(".lua")) continue;
    const m = /^([A-Za-z]+)-(\d+|n)\.lua$/.exec(file);
    if (!m) throw new Error(`lua/${file}: a script file is named <name>-<numberOfKeys>.lua or <name>-n.lua (helpers go in lua/includes/)`);
    const name = m[1] as ScriptName;
    if (!SCRIPT_NAMES.includes(name)) throw new Error(`lua/${file} is not a known script; add it to SCRIPT_NAMES`);
    if (out.has(name)) throw new Error(`two files define script ${name}`);
    const lua = inlineIncludes(luaDir, readFileSync(join(luaDir, file), "utf8"), file);
    out.set(name, { name, command: `qim_v${SCRIPT_VERSION}_${name}`, numberOfKeys: m[2] === "n" ? null : Number(m[2]), lua });
  }
  for (const name of SCRIPT_NAMES) if (!out.has(name)) throw new Error(`lua/${name}-N.lua is missing`);
  return out;
}

export function defineScripts(client: RedisClient): void {
  for (const s of loadScripts().values()) {
    client.defineCommand(s.command, s.numberOfKeys === null ? { lua: s.lua } : { numberOfKeys: s.numberOfKeys, lua: s.lua });
  }
}

/**
 * Calls a defined script command on a client, pipeline or MULTI: checks the key count against the
 * file name; a variadic (`-n`) script gets its key count first.
 */
function invoke<R>(target: RedisClient | ChainableCommander, what: string, name: ScriptName, keys: string[], args: (string | number)[]): R {
  const s = loadScripts().get(name)!;
  if (s.numberOfKeys !== null && keys.length !== s.numberOfKeys) {
    throw new InternalError(`script ${name} takes ${s.numberOfKeys} keys, called with ${keys.length}`);
  }
  const fn = (target as unknown as Record<string, (...a: (string | number)[]) => R>)[s.command];
  if (typeof fn !== "function") throw new InternalError(`script ${name} is not defined on this ${what}`);
  const head: (string | number)[] = s.numberOfKeys === null ? [keys.length] : [];
  return fn.apply(target, head.concat(keys, args));
}

/** The one typed caller: checks the key count against the file name and runs the script. */
export async function callScript(client: RedisClient, name: ScriptName, keys: string[], args: (string | number)[]): Promise<unknown[]> {
  const reply = await invoke<Promise<unknown>>(client, "client", name, keys, args);
  return Array.isArray(reply) ? reply : [reply];
}

/** Queues a script call on a pipeline or MULTI (the reply arrives with the pipeline's exec). */
export function pipelineScript(pipeline: ChainableCommander, name: ScriptName, keys: string[], args: (string | number)[]): void {
  invoke<unknown>(pipeline, "pipeline", name, keys, args);
}

/**
 * Domain failures scripts report as a leading negative integer, listed once. `scriptError`
 * turns a reply into the code so that callers switch on names, not numbers.
 */
export const LUA_STATUS = {
  OK: 0,
  DUPLICATE: 1,
  MEMBERSHIP_CHANGED: -1,
  SENDER_NOT_MEMBER: -2,
  GROUP_NOT_FOUND: -3,
  GROUP_EXISTS: -4,
  NOT_VISIBLE: -5,
  PLAN_STALE: -6,
  OWNER_IMMUTABLE: -7,
  SNAPSHOT_MISSING: -8,
  CHECKPOINT_MOVED: -9,
} as const;
export type LuaStatusName = keyof typeof LUA_STATUS;

const STATUS_BY_CODE = new Map<number, LuaStatusName>(Object.entries(LUA_STATUS).map(([k, v]) => [v, k as LuaStatusName]));

export function luaStatus(reply: unknown[]): LuaStatusName {
  const name = STATUS_BY_CODE.get(Number(reply[0]));
  if (name === undefined) throw new InternalError(`unknown Lua status ${String(reply[0])}`);
  return name;
}
