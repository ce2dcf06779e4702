/** Table-mode text of `dispatch audit`, and the message of its failure. */
import { table } from "../format.js";
import type { DispatchAuditResult, PartitionResult } from "./results.js";

const lostText = (p: PartitionResult) => (p.lost ? `[${p.lost.from}, ${p.lost.to})` : null);

export function auditText(out: DispatchAuditResult): string {
  return table(
    ["PARTITION", "VERDICT", "CHECKPOINT", "LOW", "HIGH", "LAG", "LOST", "DETAIL"],
    out.partitions.map((p) => [p.partition, p.verdict, p.checkpoint, p.low, p.high, p.lag, lostText(p), p.detail]),
  );
}

/** The partitions not OK, one by one, for the error on stderr. */
export function notOkMessage(out: DispatchAuditResult): string {
  const bad = out.partitions.filter((p) => p.verdict !== "OK");
  return `${bad.length} of ${out.partitions.length} partition(s) not OK: ${bad.map((p) => `${p.partition} ${p.verdict}${p.lost ? ` lost ${lostText(p)}` : ""}`).join(", ")}`;
}
