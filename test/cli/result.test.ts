/**
 * cli/result.ts: a result's one declaration gives the JSON result of a wire message — its fields in
 * the declaration's order, each by its rule (u64 as a number, absent as null, "" as null) or by its
 * function. Expected values are worked out by hand from the messages below.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { resultFrom } from "../../cli/result.js";

/** A wire message as ts-proto gives it (forceLong=bigint, proto3 `optional` as `?:`). */
interface Wire {
  name: string;
  seq: bigint;
  leftAt?: bigint | undefined;
  pin?: number | undefined;
  cursor: string;
  users: string[];
  state: string;
}

const result = resultFrom<Wire & { tenant: string }>()({
  tenant: "wire",
  name: "wire",
  seq: "u64",
  leftAt: "u64 or null",
  pin: "or null",
  cursor: "text or null",
  users: "wire",
  active: (w) => w.state === "ACTIVE",
});

test("each field by its rule, in the declaration's order", () => {
  const set = result({ name: "n", seq: 42n, leftAt: 7n, pin: 0, cursor: "c1", users: ["a", "b"], state: "ACTIVE", tenant: "t" });
  assert.equal(JSON.stringify(set), '{"tenant":"t","name":"n","seq":42,"leftAt":7,"pin":0,"cursor":"c1","users":["a","b"],"active":true}');
});

test("absent optional values and the empty string are null; every key is present", () => {
  const absent = result({ name: "", seq: 0n, cursor: "", users: [], state: "LEFT", tenant: "t" });
  assert.equal(JSON.stringify(absent), '{"tenant":"t","name":"","seq":0,"leftAt":null,"pin":null,"cursor":null,"users":[],"active":false}');
});

test("a u64 that a JSON number cannot hold exactly is refused, not rounded", () => {
  // 2^53 + 1 = 9007199254740993 is the first integer a double cannot represent
  assert.throws(() => result({ name: "n", seq: 9007199254740993n, cursor: "", users: [], state: "", tenant: "t" }), /9007199254740993 does not fit a JSON number exactly/);
  assert.equal(result({ name: "n", seq: 9007199254740991n, cursor: "", users: [], state: "", tenant: "t" }).seq, 9007199254740991);
});

test("the compiler refuses a rule that does not fit the wire field, or a field the wire has not (npm run typecheck)", () => {
  const refused = [
    resultFrom<Wire>()({
      // @ts-expect-error a string is no u64
      name: "u64",
    }),
    resultFrom<Wire>()({
      // @ts-expect-error a u64 is not a JSON number as it is: it needs the "u64" rule
      seq: "wire",
    }),
    resultFrom<Wire>()({
      // @ts-expect-error no such wire field: a value the command adds is declared with the wire type (Wire & { … })
      tenant: "wire",
    }),
  ];
  // at run time the declarations still map (the rule reads whatever is there): the check is the compiler's
  assert.equal(refused.length, 3);
});
