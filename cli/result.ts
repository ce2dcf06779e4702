/**
 * One declaration per JSON result (issue 25). The admin API's proto is the wire contract; a
 * command's JSON result is the user's contract, which scripts read. Each result read from the wire
 * is declared ONCE, as the list of its JSON fields in output order, each with the rule that gives
 * its value from the wire message:
 *
 *     export const groupResult = resultFrom<Group>()({ tenant: "wire", version: "u64", dissolvedAt: "u64 or null", … });
 *     export type GroupResult = ReturnType<typeof groupResult>;
 *
 * From that one declaration come the result's TypeScript type (what the command's run() returns,
 * what its text printer reads, what the contract samples in test/cli/samples/ must match), and the
 * wire → JSON mapping. A rule names a field of the same name on the wire; the compiler refuses a
 * rule that does not fit the wire field's type (a "u64" on a string, a missing field). A field
 * that is not one wire field read by one rule (a value the command adds, a nested result, a
 * narrowed string) is a function of the wire message.
 *
 * The one rule for the wire's types, applied everywhere: a u64 is a JSON number (refused when it
 * does not fit one exactly), an absent value is null and every key is always present.
 */

/**
 * A u64 of the API as a JSON number: sequences, versions and offsets stay far below 2^53, and a
 * value that does not is refused rather than printed rounded.
 */
export function u64(v: bigint | number): number {
  const n = Number(v);
  if (!Number.isSafeInteger(n)) throw new Error(`a u64 value ${String(v)} does not fit a JSON number exactly`);
  return n;
}

/** An optional u64: null when absent (every key of a JSON result is always present). */
export function optionalU64(v: bigint | number | undefined): number | null {
  return v === undefined ? null : u64(v);
}

/** proto3 has no absent string: "" means none, which JSON says as null. */
export function nonEmpty(s: string): string | null {
  return s === "" ? null : s;
}

/** The rules by name: how a JSON field's value comes from the wire field of the same name. */
const RULES = {
  /** The wire's value as it is: a string, a number, a boolean, a list of them. */
  wire: (v: unknown) => v,
  u64: (v: unknown) => u64(v as bigint),
  /** An optional u64 (proto3 `optional`): null when absent. */
  "u64 or null": (v: unknown) => optionalU64(v as bigint | undefined),
  /** An optional scalar (proto3 `optional`): null when absent. */
  "or null": (v: unknown) => v ?? null,
  /** A string whose "" means none (proto3 has no absent string): null then. */
  "text or null": (v: unknown) => nonEmpty(v as string),
} satisfies Record<string, (v: unknown) => unknown>;

export type RuleName = keyof typeof RULES;

type Plain = string | number | boolean | readonly string[] | readonly number[];

/** The rules a wire field of type V may be read with. */
type RulesFor<V> =
  [V] extends [bigint] ? "u64"
    : [V] extends [bigint | undefined] ? "u64 or null"
      : [V] extends [string] ? "wire" | "text or null"
        : [V] extends [Plain] ? "wire"
          : [V] extends [Plain | undefined] ? "or null"
            : never;

/** The JSON type a rule gives for a wire field of type V. */
type JsonFor<V, R> =
  R extends "u64" ? number
    : R extends "u64 or null" ? number | null
      : R extends "text or null" ? string | null
        : R extends "or null" ? Exclude<V, undefined> | null
          : V extends readonly (infer E)[] ? E[] : V;

/** A result's declaration: per JSON field, a rule for the wire field of that name, or a function of the wire message. */
export type Declaration<W> = Readonly<Record<string, RuleName | ((wire: W) => unknown)>>;

/** The fields of D that name a rule must name one that fits the wire field of that name. */
type Checked<W, D> = { readonly [K in keyof D]: D[K] extends RuleName ? (K extends keyof W ? RulesFor<W[K]> : never) : D[K] };

/** The JSON result a declaration describes. */
export type JsonOf<W, D> = {
  -readonly [K in keyof D]: D[K] extends (wire: W) => infer J ? J : K extends keyof W ? JsonFor<W[K], D[K]> : never;
};

/**
 * A result read from wire messages of type W: resultFrom<W>()(declaration) is the function from
 * a wire message to the JSON result, its fields in the declaration's order.
 */
export function resultFrom<W extends object>() {
  return <const D extends Declaration<W>>(declaration: D & Checked<W, D>): ((wire: W) => JsonOf<W, D>) => {
    const fields = Object.entries(declaration as Declaration<W>).map(([key, rule]): [string, (wire: W) => unknown] => {
      if (typeof rule === "function") return [key, rule];
      const read = RULES[rule];
      return [key, (wire) => read((wire as Record<string, unknown>)[key])];
    });
    return (wire) => {
      const out: Record<string, unknown> = {};
      for (const [key, value] of fields) out[key] = value(wire);
      return out as JsonOf<W, D>;
    };
  };
}
