/**
 * The JSON result of `dispatch audit`, and the verdict per dispatch-log partition that
 * `projection status` and the dashboard show too.
 */
import type { DispatchAuditResponse, PartitionState } from "../../admin-api/client.js";
import { optionalU64, u64 } from "../format.js";

export interface PartitionResult {
  partition: number;
  /** OK, NO_CHECKPOINT, OVER_WINDOW, BEYOND_HIGH or IDENTITY_MISMATCH. */
  verdict: string;
  checkpoint: number | null;
  low: number;
  high: number;
  lag: number | null;
  newestMs: number | null;
  /** Offsets [from, to) dropped before the consumer read them. */
  lost: { from: number; to: number } | null;
  detail: string;
}

export function partitionResult(p: PartitionState): PartitionResult {
  return {
    partition: p.partition,
    verdict: p.verdict,
    checkpoint: optionalU64(p.checkpoint),
    low: u64(p.low),
    high: u64(p.high),
    lag: optionalU64(p.lag),
    newestMs: optionalU64(p.newestMs),
    lost: p.lost ? { from: u64(p.lost.from), to: u64(p.lost.to) } : null,
    detail: p.detail,
  };
}

export interface DispatchAuditResult {
  /** True when every partition is OK (exit 0); otherwise exit 4. */
  ok: boolean;
  partitions: PartitionResult[];
}

export function dispatchAuditResult(r: DispatchAuditResponse): DispatchAuditResult {
  return { ok: r.ok, partitions: r.partitions.map(partitionResult) };
}
