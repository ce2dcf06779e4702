import { InternalError } from "../base/index.js";
import { invokeScript, scriptFile } from "./loader.js";

/**
 * Typed script wrappers after BullMQ's `scripts.ts`: each script is declared once, beside the
 * module that owns it, with its KEYS by name (in the order of the script's header), a builder of
 * its ARGV from named fields and a decoder of its reply. Call sites pass the keys object of their
 * conversation or user and get a typed reply: nobody builds a KEYS array by hand or reads
 * `reply[3]`. The declared key count is checked against the file name on first use and by
 * test/lua/loader.test.ts for every script.
 */

export type Arg = string | number;

/** Domain failures scripts report as a leading small integer, listed once. */
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
  /** A fenced write whose unit's lease names another owner or a newer token (core/cluster). */
  FENCED: -10,
  /** A lease compare-and-set that found another owner or token than the one observed. */
  LEASE_MOVED: -11,
  /** A compare-and-set on conversation-list rows that found a row other than the one read (core/conversation-list). */
  ROW_MOVED: -12,
  /** A CMD message whose audience exceeds CMD_MAX_RECIPIENTS (core/cmd-sync). */
  CMD_TOO_MANY_RECIPIENTS: -13,
  /** A client_message_id reused for a message with other content (lua/conversation/commitMessages). */
  IDEMPOTENCY_CONFLICT: -14,
  /** A write to a group that was dissolved (its reply carries dissolved_at; lua/conversation/dissolveGroup). */
  GROUP_DISSOLVED: -15,
  /** A join that would take a group past groups.max_members (lua/conversation/applyMembership). */
  GROUP_FULL: -16,
  /** An issue that would give a user more than TOKENS_PER_USER_MAX live device tokens (lua/tokens/recordToken). */
  TOKENS_FULL: -17,
  /** A registry change whose expected version is not the tenant registry's (lua/registry/applyTypes). */
  REGISTRY_VERSION_MOVED: -18,
  /** A registry change that would give a tenant more than REGISTRY_MAX_TYPES types (lua/registry/applyTypes). */
  REGISTRY_FULL: -19,
  /** A recall or edit of a message that is not there (absent, trimmed, or an event) (lua/conversation/commitAnchorEvent). */
  NO_SUCH_MESSAGE: -20,
  /** A user's own recall or edit of someone else's message. */
  NOT_AUTHOR: -21,
  /** A user's own recall or edit past recall_self_window / edit_self_window (the reply carries the message's created_at). */
  WINDOW_PASSED: -22,
  /** An edit of a recalled message. */
  MESSAGE_RECALLED: -23,
  /** A reaction with a new key on a message that has REACTION_MAX_KEYS_PER_MESSAGE distinct keys already (lua/reactions/react). */
  REACTION_KEYS_FULL: -24,
  /** An INVITE to a user who is in another call (lua/rtc/callState). */
  RTC_BUSY: -25,
  /** An answer to a call the user is not in (lua/rtc/callState). */
  RTC_NO_CALL: -26,
} as const;
export type LuaStatusName = keyof typeof LUA_STATUS;

const STATUS_BY_CODE = new Map<number, LuaStatusName>(Object.entries(LUA_STATUS).map(([k, v]) => [v, k as LuaStatusName]));

/** The name of a status code; undefined for a code this side does not know. */
export function statusName(code: unknown): LuaStatusName | undefined {
  return STATUS_BY_CODE.get(Number(code));
}

/** The status a reply leads with, by name, so that decoders switch on names, not numbers. */
export function luaStatus(reply: readonly unknown[]): LuaStatusName {
  const name = statusName(reply[0]);
  if (name === undefined) throw new InternalError(`unknown Lua status ${String(reply[0])}`);
  return name;
}

/** A reply as an array (a script returning one value gives it bare). */
function asArray(reply: unknown): unknown[] {
  return Array.isArray(reply) ? reply : [reply];
}

interface Declared {
  name: string;
  /** null: variadic. */
  numberOfKeys: number | null;
}

const declared = new Map<string, Declared>();

/** Every script a loaded module declared (the loader test holds them against lua/'s files). */
export function declaredScripts(): readonly Declared[] {
  return [...declared.values()];
}

function declare(name: string, numberOfKeys: number | null): void {
  if (declared.has(name)) throw new InternalError(`script ${name} is declared twice`);
  declared.set(name, { name, numberOfKeys });
}

function checkedAgainstFile(name: string, numberOfKeys: number | null): () => void {
  let checked = false;
  return () => {
    if (checked) return;
    const file = scriptFile(name);
    if (file.numberOfKeys !== numberOfKeys) {
      throw new InternalError(`script ${name} is declared with ${numberOfKeys ?? "any number of"} keys but lua/${file.file} says ${file.numberOfKeys ?? "n"}`);
    }
    checked = true;
  };
}

export interface Script<K extends string, A, R> {
  readonly name: string;
  readonly keys: readonly K[];
  run(client: object, keys: Readonly<Record<K, string>>, args: A): Promise<R>;
  /** Queues the call on a pipeline or MULTI; decode its slot of the exec result with `decode`. */
  queue(pipeline: object, keys: Readonly<Record<K, string>>, args: A): void;
  decode(raw: unknown): R;
}

export function defineScript<K extends string, A, R>(decl: {
  name: string;
  keys: readonly K[];
  args: (a: A) => readonly Arg[];
  reply: (raw: unknown[]) => R;
}): Script<K, A, R> {
  declare(decl.name, decl.keys.length);
  const check = checkedAgainstFile(decl.name, decl.keys.length);
  const keyList = (k: Readonly<Record<K, string>>) => decl.keys.map((name) => k[name]);
  return {
    name: decl.name,
    keys: decl.keys,
    async run(client, keys, args) {
      check();
      const raw = await invokeScript<Promise<unknown>>(client, "client", decl.name, keyList(keys), decl.args(args));
      return decl.reply(asArray(raw));
    },
    queue(pipeline, keys, args) {
      check();
      invokeScript<unknown>(pipeline, "pipeline", decl.name, keyList(keys), decl.args(args));
    },
    decode: (raw) => decl.reply(asArray(raw)),
  };
}

export interface VariadicScript<I, R> {
  readonly name: string;
  /** One call over `items`: each item contributes its keys and its arguments, in order. */
  run(client: object, items: readonly I[]): Promise<R>;
}

/**
 * A script over a list of items that each bring keys and arguments (`-n.lua`): the declaration
 * says how one item becomes its keys and its arguments.
 */
export function defineVariadicScript<I, R>(decl: {
  name: string;
  itemKeys: (item: I) => readonly string[];
  itemArgs: (item: I) => readonly Arg[];
  reply: (raw: unknown[]) => R;
}): VariadicScript<I, R> {
  declare(decl.name, null);
  const check = checkedAgainstFile(decl.name, null);
  return {
    name: decl.name,
    async run(client, items) {
      check();
      const keys: string[] = [];
      const args: Arg[] = [];
      for (const item of items) {
        keys.push(...decl.itemKeys(item));
        args.push(...decl.itemArgs(item));
      }
      return decl.reply(asArray(await invokeScript<Promise<unknown>>(client, "client", decl.name, keys, args)));
    },
  };
}
