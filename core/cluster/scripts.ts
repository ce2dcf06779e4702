import { defineScript, luaStatus } from "../lua/index.js";

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
}

export interface RegistryView {
  /** Redis TIME (ms) when the script ran: every age is judged by this one clock. */
  now: number;
  nodes: RegistryEntry[];
}

function parseRecord(nodeId: string, rec: string, drained: string): RegistryEntry {
  const parts = rec.split("|");
  const beatAt = Number(parts.pop());
  const startedAt = Number(parts.pop());
  const address = parts.shift() ?? "";
  return { nodeId, address, version: parts.join("|"), startedAt, beatAt, drainedAt: drained === "" ? null : Number(drained) };
}

/** Records a heartbeat (nodeId "" only reads) and returns the registry with Redis's time. */
export const heartbeatScript = defineScript({
  name: "heartbeat",
  keys: ["nodes", "draining"],
  args: (a: { nodeId: string; address: string; version: string; startedAt: number; fresh: boolean; forgetAfterMs: number }) =>
    [a.nodeId, a.address, a.version, a.startedAt, a.fresh ? "1" : "0", a.forgetAfterMs],
  reply: (r): RegistryView => {
    const nodes: RegistryEntry[] = [];
    for (let i = 1; i + 2 < r.length; i += 3) nodes.push(parseRecord(String(r[i]), String(r[i + 1]), String(r[i + 2])));
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
