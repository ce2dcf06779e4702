/**
 * The assignment of units to nodes (core/cluster/assignment.ts): rendezvous hashing with bounded
 * load. A hand-computed example with a score table, then properties of the real score over the
 * unit counts the engine uses.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { assignUnits, hrwScore, type UnitKind } from "../../core/index.js";

// score[node][unit], higher wins
const SCORES: Record<string, number[]> = {
  A: [9, 8, 7, 6],
  B: [5, 7, 1, 2],
  C: [1, 2, 6, 3],
  D: [0, 10, 0, 0],
};
const table = (node: string, unit: number) => SCORES[node]![unit]!;

test("assignment by hand: 4 units on A, B, C; then C leaves; then D joins", () => {
  // N=3, U=4: floor 1, one node may hold 2.
  // u0: A (top). u1: A again (takes the one extra). u2: A is full, next C. u3: A full, C at floor
  // with no extra left, B.
  assert.deepEqual(assignUnits(4, ["A", "B", "C"], table), ["A", "A", "C", "B"]);
  assert.deepEqual(assignUnits(4, ["C", "A", "B"], table), ["A", "A", "C", "B"], "the order nodes are given in does not matter");
  // C leaves: N=2, floor 2. u0 A, u1 A, u2 B (A full), u3 B. One move: C's unit.
  assert.deepEqual(assignUnits(4, ["A", "B"], table), ["A", "A", "B", "B"]);
  // D joins A, B, C: N=4, floor 1, no extra. u0 A, u1 D (its top), u2 C (A full), u3 B. One move: u1.
  assert.deepEqual(assignUnits(4, ["A", "B", "C", "D"], table), ["A", "D", "C", "B"]);
  assert.deepEqual(assignUnits(3, [], table), [null, null, null]);
});

const counts = (owners: (string | null)[]) => {
  const m = new Map<string, number>();
  for (const o of owners) m.set(o!, (m.get(o!) ?? 0) + 1);
  return m;
};
const moved = (a: (string | null)[], b: (string | null)[]) => a.filter((o, i) => o !== b[i]).length;
const nodes = (n: number) => Array.from({ length: n }, (_, i) => `node-${i + 1}`);

test("assignment: every node holds floor(U/N) or ceil(U/N) units, for each kind, U in {256, 8, 5} and N = 1..7", () => {
  for (const kind of ["relay", "partition", "slot"] as UnitKind[]) {
    for (const U of [256, 8, 5]) {
      for (let n = 1; n <= 7; n++) {
        const owners = assignUnits(U, nodes(n), hrwScore(kind));
        assert.equal(owners.length, U);
        const c = [...counts(owners).values()];
        const busy = Math.min(n, U);
        assert.equal(c.length, busy, `${kind} U=${U} N=${n}: ${busy} nodes get units`);
        assert.ok(Math.max(...c) - Math.min(...c) <= 1, `${kind} U=${U} N=${n}: counts ${c.join(",")}`);
        assert.equal(c.reduce((a, x) => a + x, 0), U);
      }
    }
  }
});

test("assignment: a node leaving or joining moves few more units than the minimum (the leaver's units / the joiner's share)", () => {
  for (const kind of ["relay", "partition", "slot"] as UnitKind[]) {
    for (const U of [256, 8]) {
      const three = assignUnits(U, nodes(3), hrwScore(kind));
      const two = assignUnits(U, nodes(2), hrwScore(kind));
      const four = assignUnits(U, nodes(4), hrwScore(kind));
      const leaverHeld = three.filter((o) => o === "node-3").length;
      const joinerGets = four.filter((o) => o === "node-4").length;
      assert.ok(moved(three, two) >= leaverHeld);
      assert.ok(moved(three, two) <= Math.ceil(1.25 * leaverHeld) + 1, `${kind} U=${U}: leave moved ${moved(three, two)}, minimum ${leaverHeld}`);
      assert.ok(moved(three, four) <= Math.ceil(1.25 * joinerGets) + 1, `${kind} U=${U}: join moved ${moved(three, four)}, minimum ${joinerGets}`);
    }
  }
});
