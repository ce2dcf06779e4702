/** Contract samples of `audit tail` (test/cli/result-samples.ts). */
import type AuditTail from "../../../cli/commands/audit/tail.js";
import { freeForm, samplesOf, streamedUnder, type ResultOf } from "../result-samples.js";
import type { AuditEntryResult } from "../../../cli/audit/results.js";

const entry: AuditEntryResult = {
  time: "2026-11-29T22:01:53.294Z",
  principal: "oscar",
  role: "operator",
  rpc: "/qim.admin.v1.GroupService/AddMembers",
  arguments: freeForm({ tenant: "8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c", group: "5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39", users: ["9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"], dryRun: false }),
  result: "OK",
  detail: "committed join of 1 user(s) as seq 2; version 2, 3 members",
  durationMs: 4.37,
  requestId: "fdd8d7f1-2c3b-4a5d-8e6f-7a8b9c0d1e2f",
  fingerprint: "1F:68:0A:0B",
};

export const samples = {
  // with --follow: one entry per line, as the server writes them
  "audit tail": streamedUnder<AuditEntryResult>(samplesOf<ResultOf<typeof AuditTail>>({ entries: [entry] }, { entries: [] }), "follow", entry),
};
