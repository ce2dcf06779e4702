import { metrics } from "./metrics.js";

/**
 * The kinds of units of work: relay buckets `{bNNN}`, dispatch partitions `{dNNN}`, user slots
 * `{uNNN}`, room units `{rNNN}` (issue 28: the writer of every room hashed to the unit, core/rooms).
 */
export type UnitKind = "relay" | "partition" | "slot" | "room";
export const UNIT_KINDS: readonly UnitKind[] = ["relay", "partition", "slot", "room"];

/** What a write only the owner may make carries, checked inside its Lua against the unit's lease. */
export interface Fence {
  /** The owner's node id; "" without a cluster. */
  owner: string;
  /** The fencing token of the owner's lease; 0 without a cluster. */
  token: number;
}

/** The fenced writes, as the refusal counter labels them. */
export type FencedWrite = "mark_committed" | "append" | "fanout_progress" | "checkpoint" | "pop_registered" | "retention_trim";

/**
 * What the relay, the projection consumer and the registration task ask before working on a
 * unit: whether this process owns it and with which fence. `enter` and `leave` bracket each piece
 * of work, so that a node gives a unit up only once its work in flight on it has stopped.
 */
export interface UnitGate {
  /** True when the writes of this process carry a lease (a cluster node): the relay checks the lease before appending. */
  readonly fenced: boolean;
  /** Local belief, no I/O. */
  owns(kind: UnitKind, unit: number): boolean;
  /** Starts work on a unit: its fence, or null when this process does not own it (do nothing then). Pair with leave(). */
  enter(kind: UnitKind, unit: number): Fence | null;
  leave(kind: UnitKind, unit: number): void;
  /** A fenced write was refused: the unit is someone else's; it is dropped locally and counted. */
  refused(kind: UnitKind, unit: number, write: FencedWrite, fence: Fence): void;
}

const SOLO_FENCE: Fence = Object.freeze({ owner: "", token: 0 });

/**
 * A runtime without a cluster (tests, benches, single programs) owns every unit and writes with
 * token 0, which the scripts accept only while no node ever took the unit.
 */
export const SOLO_GATE: UnitGate = {
  fenced: false,
  owns: () => true,
  enter: () => SOLO_FENCE,
  leave: () => {},
  refused: (kind, _unit, write) => { metrics.fencedRefusals.inc({ kind, write }); },
};
