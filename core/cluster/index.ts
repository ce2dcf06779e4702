/**
 * The engine cluster (issue 11, docs/cluster.md): nodes registered with a heartbeat lease judged
 * by Redis's clock, units of work (relay buckets, dispatch partitions, user slots, room units) each with one
 * owner recorded on the unit's own hash tag with a fencing token that only grows, the balanced
 * assignment, and the gate the relay, the projection consumer and the registration task consult.
 * Owns the keys `{g000}:cluster:*` and `{b|d|u|rNNN}:cluster:lease:*`, the scripts of lua/cluster/
 * and its metrics.
 */
export { assignUnits, hrwScore, type Score } from "./assignment.js";
export { parseUnits } from "./scripts.js";
export { SOLO_GATE, UNIT_KINDS, type Fence, type FencedWrite, type UnitGate, type UnitKind } from "./gate.js";
export { StaleOwnerError } from "./errors.js";
export { drainingKey, nodesKey, unitLeaseKey, unitsKey, unitTag } from "./keys.js";
export { leaseHolds, readLease } from "./lease.js";
export {
  ClusterMembership, DEFAULT_HEARTBEAT_INTERVAL_MS, DEFAULT_LEASE_TTL_MS, FORGET_AFTER_TTLS, RELAY_BUCKET_COUNT, ROOM_UNIT_COUNT, SLOT_COUNT, slotOfUser,
  type ClusterOptions, type OwnedCounts, type KickForwarder, type NodeRecord, type UnitOwner,
} from "./membership.js";
