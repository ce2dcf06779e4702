import { bucketTag, GLOBAL_TAG, partitionTag, roomTag, userTag, type KeySpace } from "../base/index.js";
import type { UnitKind } from "./gate.js";

/** The node registry: nodeId → "address|version|startedAt|beatAt" (beatAt by Redis TIME). On `{g000}`. */
export function nodesKey(space: KeySpace): string {
  return space.key(GLOBAL_TAG, "cluster:nodes");
}

/** Nodes marked draining (nodeId → drainedAt ms): they hand their units over and take none. On `{g000}`. */
export function drainingKey(space: KeySpace): string {
  return space.key(GLOBAL_TAG, "cluster:draining");
}

/** The kinds of units each node takes (nodeId → "relay,partition"; absent: every kind). On `{g000}`. */
export function unitsKey(space: KeySpace): string {
  return space.key(GLOBAL_TAG, "cluster:units");
}

/** The hash tag of a unit: its data's own tag, so a script can check the lease beside the data it guards. */
export function unitTag(kind: UnitKind, unit: number): string {
  return kind === "relay" ? bucketTag(unit) : kind === "partition" ? partitionTag(unit) : kind === "slot" ? userTag(unit) : roomTag(unit);
}

/** A unit's lease (hash: owner, token, since), on the unit's own tag. */
export function unitLeaseKey(space: KeySpace, kind: UnitKind, unit: number): string {
  return space.key(unitTag(kind, unit), `cluster:lease:${kind}`);
}
