/** The JSON results of the `projection` commands (docs/operator-guide.md). */
import type { EpochBump, EpochInfo, ProjectionStatus, RebuildUserResponse } from "../../admin-api/client.js";
import { partitionResult, type PartitionResult } from "../dispatch/results.js";
import { optionalU64, u64 } from "../format.js";

export interface EpochBumpResult {
  /** The epoch after this bump. */
  epoch: number;
  reason: string;
  /** Who bumped it: a principal, or "projection" (the consumer's own start-up/runtime audit). */
  by: string;
  atMs: number;
}

export function epochBumpResult(b: EpochBump): EpochBumpResult {
  return { epoch: u64(b.epoch), reason: b.reason, by: b.by, atMs: u64(b.atMs) };
}

export interface EpochResult {
  epoch: number;
  /** Newest first. */
  bumps: EpochBumpResult[];
}

export function epochResult(e: EpochInfo): EpochResult {
  return { epoch: u64(e.epoch), bumps: e.bumps.map(epochBumpResult) };
}

export interface RebuildResult {
  tenant: string;
  user: string;
  epoch: number;
  /** False when the user's mark was current (and no --force): nothing read or written. */
  rebuilt: boolean;
  /** Conversations read from the authority and merged into the user's list. */
  merged: number;
  /** The user's epoch mark after the call. */
  mark: number;
}

export function rebuildResult(tenant: string, user: string, r: RebuildUserResponse): RebuildResult {
  return { tenant, user, epoch: u64(r.epoch), rebuilt: r.rebuilt, merged: r.merged, mark: u64(r.mark) };
}

export interface ProjectionStatusResult {
  epoch: number;
  authority: string;
  retentionMs: number;
  /** Set when the consumer stopped on a partition it must not continue on. */
  failure: string | null;
  partitions: (PartitionResult & { checkpointUpdatedAtMs: number | null })[];
  /** Registrations waiting to be written to the authority, and dead letters kept, per Redis instance. */
  pending: { instance: number; depth: number; deadLetters: number }[];
}

export function projectionStatusResult(s: ProjectionStatus): ProjectionStatusResult {
  return {
    epoch: u64(s.epoch),
    authority: s.authority,
    retentionMs: u64(s.retentionMs),
    failure: s.failure ?? null,
    partitions: s.partitions.map((p) => ({ ...partitionResult(p), checkpointUpdatedAtMs: optionalU64(p.checkpointUpdatedAtMs) })),
    pending: s.pending.map((p) => ({ instance: p.instance, depth: u64(p.depth), deadLetters: u64(p.deadLetters) })),
  };
}
