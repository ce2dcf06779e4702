import { createHash } from "node:crypto";
import type { UnitKind } from "./gate.js";

/** A node's rendezvous (highest-random-weight) score for a unit: higher wins. */
export type Score = (nodeId: string, unit: number) => number;

/** The default score: the first 6 bytes of sha256(kind, unit, node), the same on every node. */
export function hrwScore(kind: UnitKind): Score {
  return (nodeId, unit) => createHash("sha256").update(`${kind}\0${unit}\0${nodeId}`).digest().readUIntBE(0, 6);
}

/**
 * Rendezvous hashing with bounded load: unit by unit in order, each goes to its highest-scoring
 * node that still has room, where room keeps every count at floor(U/N) or ceil(U/N) — at most
 * U mod N nodes reach the ceiling — so the counts differ by at most one. A node's joining or
 * leaving moves mostly the units whose top choice it is, plus the few the bound pushes along.
 * Deterministic from the set of nodes (their order does not matter): every node computes the same.
 * Returns the owner of each unit (null only without nodes).
 */
export function assignUnits(unitCount: number, nodeIds: readonly string[], score: Score): (string | null)[] {
  const nodes = [...new Set(nodeIds)].sort();
  if (nodes.length === 0) return Array.from({ length: unitCount }, () => null);
  const floor = Math.floor(unitCount / nodes.length);
  let extras = unitCount % nodes.length;
  const count = new Map(nodes.map((n) => [n, 0]));
  const out: string[] = [];
  for (let unit = 0; unit < unitCount; unit++) {
    const ranked = nodes.map((n) => ({ n, s: score(n, unit) })).sort((a, b) => b.s - a.s || (a.n < b.n ? -1 : 1));
    let chosen: string | undefined;
    for (const { n } of ranked) {
      const c = count.get(n)!;
      if (c < floor) { chosen = n; break; }
      if (c === floor && extras > 0) { chosen = n; extras--; break; }
    }
    count.set(chosen!, count.get(chosen!)! + 1);
    out.push(chosen!);
  }
  return out;
}
