/** Table-mode text of `audit tail`. */
import { table } from "../format.js";
import type { AuditEntryResult, AuditTailResult } from "./results.js";

export function auditTailText(out: AuditTailResult): string {
  return table(
    ["TIME", "PRINCIPAL", "ROLE", "RPC", "RESULT", "MS", "DETAIL"],
    out.entries.map((e) => [e.time, e.principal || "-", e.role || "-", e.rpc.replace(/^\/qim\.admin\.v1\./, ""), e.result, e.durationMs.toFixed(1), e.detail]),
  );
}

/** One entry on one line (`audit tail --follow`): the table's columns, not aligned, as entries arrive. */
export function auditLine(e: AuditEntryResult): string {
  return [e.time, e.principal || "-", e.role || "-", e.rpc.replace(/^\/qim\.admin\.v1\./, ""), e.result, `${e.durationMs.toFixed(1)}ms`, e.detail].join("  ");
}
