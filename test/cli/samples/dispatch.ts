/** Contract samples of `dispatch audit` (test/cli/result-samples.ts), and partitions for the topics that show them. */
import type DispatchAudit from "../../../cli/commands/dispatch/audit.js";
import { samplesOf, type ResultOf } from "../result-samples.js";
import type { PartitionResult } from "../../../cli/dispatch/results.js";

export const okPartition: PartitionResult = { partition: 0, verdict: "OK", checkpoint: 1042, low: 0, high: 1042, lag: 0, newestMs: 1795990116099, lost: null, detail: "ok" };

export const lostPartition: PartitionResult = {
  partition: 3,
  verdict: "NO_CHECKPOINT",
  checkpoint: null,
  low: 300,
  high: 940,
  lag: null,
  newestMs: null,
  lost: { from: 0, to: 300 },
  detail: "no checkpoint while the low watermark is 300: offsets [0, 300) may never have been projected",
};

export const samples = {
  "dispatch audit": samplesOf<ResultOf<typeof DispatchAudit>>(
    { ok: true, partitions: [okPartition] },
    { ok: false, partitions: [okPartition, lostPartition] },
  ),
};
