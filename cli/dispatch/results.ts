/**
 * The JSON result of `dispatch audit`, and the verdict per dispatch-log partition that
 * `projection status` and the dashboard show too; cli/result.ts says how they are declared.
 */
import type { DispatchAuditResponse, PartitionState } from "../../admin-api/client.js";
import { resultFrom, u64 } from "../result.js";

export const partitionResult = resultFrom<PartitionState>()({
  partition: "wire",
  /** OK, NO_CHECKPOINT, OVER_WINDOW, BEYOND_HIGH or IDENTITY_MISMATCH. */
  verdict: "wire",
  checkpoint: "u64 or null",
  low: "u64",
  high: "u64",
  lag: "u64 or null",
  newestMs: "u64 or null",
  /** Offsets [from, to) dropped before the consumer read them. */
  lost: (p): { from: number; to: number } | null => (p.lost ? { from: u64(p.lost.from), to: u64(p.lost.to) } : null),
  detail: "wire",
});
export type PartitionResult = ReturnType<typeof partitionResult>;

export const dispatchAuditResult = resultFrom<DispatchAuditResponse>()({
  /** True when every partition is OK (exit 0); otherwise exit 4. */
  ok: "wire",
  partitions: (r) => r.partitions.map(partitionResult),
});
export type DispatchAuditResult = ReturnType<typeof dispatchAuditResult>;
