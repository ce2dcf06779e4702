import { defineScript, luaStatus } from "../lua/index.js";
import { UNIT_KINDS, type UnitKind } from "./gate.js";

/** The cluster's scripts (lua/cluster/), each declared once. */

export interface RegistryEntry {
  nodeId: string;
  address: string;
  version: string;
  startedAt: number;
  /** Redis TIME (ms) of its last heartbeat. */
  beatAt: number;
  /** null when not draining. */
  drainedAt: number | null;
  /** The kinds of units it takes (every kind unless it said otherwise). */
  units: readonly UnitKind[];
}

export interface RegistryView {
  /** Redis TIME (ms) when the script ran: every age is judged by this one clock. */
  now: number;
  nodes: RegistryEntry[];
}

/** "relay,partition" → its kinds in UNIT_KINDS order; "" (or a record from before node roles) → every kind; unknown names are ignored. */
export function parseUnits(text: string): readonly UnitKind[] {
  if (text === "") return UNIT_KINDS;
  const named = new Set(text.split(","));
  return UNIT_KINDS.filter((k) => named.has(k));
}

function parseRecord(nodeId: string, rec: string, drained: string, units: string): RegistryEntry {
  const parts = rec.split("|");
  const beatAt = Number(parts.pop());
  const startedAt = Number(parts.pop());
  const address = parts.shift() ?? "";
  return { nodeId, address, version: parts.join("|"), startedAt, beatAt, drainedAt: drained === "" ? null : Number(drained), units: parseUnits(units) };
}

/**
 * Records a heartbeat (nodeId "" only reads) and returns the registry with Redis's time. `units`:
 * the kinds the node takes; every kind is written as "" (absent), as a node from before node roles
 * left it.
 */
export const heartbeatScript = defineScript({
  name: "heartbeat",
  keys: ["nodes", "draining", "units"],
  args: (a: { nodeId: string; address: string; version: string; startedAt: number; fresh: boolean; forgetAfterMs: number; units: readonly UnitKind[] }) =>
    [a.nodeId, a.address, a.version, a.startedAt, a.fresh ? "1" : "0", a.forgetAfterMs, a.units.length === UNIT_KINDS.length ? "" : a.units.join(",")],
  reply: (r): RegistryView => {
    const nodes: RegistryEntry[] = [];
    for (let i = 1; i + 3 < r.length; i += 4) nodes.push(parseRecord(String(r[i]), String(r[i + 1]), String(r[i + 2]), String(r[i + 3])));
    return { now: Number(r[0]), nodes };
  },
});

export type LeaseCas = { ok: true; token: number } | { ok: false; owner: string; token: number };

const casReply = (r: unknown[]): LeaseCas =>
  luaStatus(r) === "OK" ? { ok: true, token: Number(r[1]) } : { ok: false, owner: String(r[1] ?? ""), token: Number(r[2] ?? 0) };

/** Takes a unit from the owner the caller observed, bumping the token. */
export const acquireUnitScript = defineScript({
  name: "acquireUnit",
  keys: ["lease"],
  args: (a: { expectedOwner: string; expectedToken: number; owner: string }) => [a.expectedOwner, a.expectedToken, a.owner],
  reply: casReply,
});

/** Gives a unit up: owner "", token bumped. */
export const releaseUnitScript = defineScript({
  name: "releaseUnit",
  keys: ["lease"],
  args: (a: { owner: string; token: number }) => [a.owner, a.token],
  reply: casReply,
});
