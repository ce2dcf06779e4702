/** The JSON results of the `projection` commands (docs/operator-guide.md); cli/result.ts says how they are declared. */
import type { EpochBump, EpochInfo, ProjectionStatus, RebuildUserResponse } from "../../admin-api/client.js";
import { partitionResult, type PartitionResult } from "../dispatch/results.js";
import { optionalU64, resultFrom } from "../result.js";

export const epochBumpResult = resultFrom<EpochBump>()({
  /** The epoch after this bump. */
  epoch: "u64",
  reason: "wire",
  /** Who bumped it: a principal, or "projection" (the consumer's own start-up/runtime audit). */
  by: "wire",
  atMs: "u64",
});
export type EpochBumpResult = ReturnType<typeof epochBumpResult>;

export const epochResult = resultFrom<EpochInfo>()({
  epoch: "u64",
  /** Newest first. */
  bumps: (e) => e.bumps.map(epochBumpResult),
});
export type EpochResult = ReturnType<typeof epochResult>;

export const rebuildResult = resultFrom<RebuildUserResponse & { tenant: string; user: string }>()({
  tenant: "wire",
  user: "wire",
  epoch: "u64",
  /** False when the user's mark was current (and no --force): nothing read or written. */
  rebuilt: "wire",
  /** Conversations read from the authority and merged into the user's list. */
  merged: "wire",
  /** The user's epoch mark after the call. */
  mark: "u64",
});
export type RebuildResult = ReturnType<typeof rebuildResult>;

/** Registrations waiting to be written to the authority, and dead letters kept, on one Redis instance. */
const pendingResult = resultFrom<ProjectionStatus["pending"][number]>()({
  instance: "wire",
  depth: "u64",
  deadLetters: "u64",
});

export const projectionStatusResult = resultFrom<ProjectionStatus>()({
  epoch: "u64",
  authority: "wire",
  retentionMs: "u64",
  /** Set when the consumer stopped on a partition it must not continue on. */
  failure: "or null",
  partitions: (s): (PartitionResult & { checkpointUpdatedAtMs: number | null })[] =>
    s.partitions.map((p) => ({ ...partitionResult(p), checkpointUpdatedAtMs: optionalU64(p.checkpointUpdatedAtMs) })),
  /** Per Redis instance. */
  pending: (s) => s.pending.map(pendingResult),
});
export type ProjectionStatusResult = ReturnType<typeof projectionStatusResult>;
