/** Contract samples of the `projection` commands (test/cli/result-samples.ts), and a status for the dashboard's. */
import type ProjectionBump from "../../../cli/commands/projection/bump.js";
import type ProjectionEpoch from "../../../cli/commands/projection/epoch.js";
import type ProjectionRebuild from "../../../cli/commands/projection/rebuild.js";
import type ProjectionStatus from "../../../cli/commands/projection/status.js";
import { samplesOf, type ResultOf } from "../result-samples.js";
import { lostPartition, okPartition } from "./dispatch.js";

const bump: ResultOf<typeof ProjectionBump> = { epoch: 4, reason: "restored redis-3 from the 02:00 snapshot", by: "oscar", atMs: 1795990116099 };

export const status: ResultOf<typeof ProjectionStatus> = {
  epoch: 4,
  authority: "redis-hash (development fallback, not an authority guarantee; keys qim:{uNNN}:ucs:*)",
  retentionMs: 86_400_000,
  failure: null,
  partitions: [{ ...okPartition, checkpointUpdatedAtMs: 1795990116120 }, { ...lostPartition, checkpointUpdatedAtMs: null }],
  pending: [{ instance: 0, depth: 0, deadLetters: 0 }],
};

export const samples = {
  "projection bump": samplesOf<ResultOf<typeof ProjectionBump>>(bump),
  "projection epoch": samplesOf<ResultOf<typeof ProjectionEpoch>>({ epoch: 4, bumps: [bump] }, { epoch: 0, bumps: [] }),
  "projection rebuild": samplesOf<ResultOf<typeof ProjectionRebuild>>({ tenant: "8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c", user: "0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b", epoch: 4, rebuilt: true, merged: 12, mark: 4 }),
  "projection status": samplesOf<ResultOf<typeof ProjectionStatus>>(
    status,
    { ...status, failure: "partition 0 BEYOND_HIGH: checkpoint 1000000 is beyond the high watermark 9", partitions: [], pending: [] },
  ),
};
