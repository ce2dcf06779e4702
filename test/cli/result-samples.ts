/**
 * Samples of each command's JSON result, the source of the locked output contract (STYLE "Locked
 * output contracts", after Salesforce CLI's command-snapshot.json and schemas): every topic's
 * `test/cli/samples/<topic>.ts` gives, per command id, values typed as what the command's run()
 * returns, so that the compiler makes them follow the declared result type.
 * test/cli/snapshot.test.ts derives each result's shape (field names and JSON types, nested) from
 * them and compares it with cli/command-snapshot.json; the e2e suite checks every real JSON output
 * against the same shape.
 *
 * Give samples that between them show every field both ways it can be (null and set, an empty
 * array and one element): the shape of a field is the union of what the samples show.
 */

/** What a command's run() resolves to: the JSON it prints. */
export type ResultOf<C extends abstract new (...args: never[]) => { run(): Promise<unknown> }> = Awaited<ReturnType<InstanceType<C>["run"]>>;

export interface ResultSamples {
  /** "json": one JSON document on stdout; "json-lines": one JSON object per line (a stream). */
  output: "json" | "json-lines";
  values: readonly unknown[];
  /**
   * What the command prints instead when a flag is given, by the flag's name: `membership add
   * --from-file` streams JSON lines of its batches where `membership add` prints one result. The
   * exception, not the rule: a flag that changes the output's kind, not a field.
   */
  withFlag?: Readonly<Record<string, ResultSamples>>;
}

export function samplesOf<T>(...values: [T, ...T[]]): ResultSamples {
  return { output: "json", values };
}

export function lineSamplesOf<T>(...values: [T, ...T[]]): ResultSamples {
  return { output: "json-lines", values };
}

/** `base`, and `variant` when the invocation has --`flag` (ResultSamples.withFlag). */
export function withFlag(base: ResultSamples, flag: string, variant: ResultSamples): ResultSamples {
  return { ...base, withFlag: { ...base.withFlag, [flag]: variant } };
}

/** Adds the line-per-object output a command prints under `--<flag>` (`audit tail --follow`): a withFlag of JSON lines. */
export function streamedUnder<T>(samples: ResultSamples, flag: string, ...values: [T, ...T[]]): ResultSamples {
  return withFlag(samples, flag, { output: "json-lines", values });
}

/** Objects whose content is free-form JSON (the request of an audit entry): the shape says "any". */
export const FREE_FORM = new WeakSet<object>();
/** Objects keyed by data, not by field names (counters by op): the shape is that of their values. */
export const KEYED_BY_DATA = new WeakSet<object>();

export function freeForm<T extends object>(value: T): T {
  FREE_FORM.add(value);
  return value;
}

export function keyedByData<T extends object>(value: T): T {
  KEYED_BY_DATA.add(value);
  return value;
}
