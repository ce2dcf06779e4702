/** The JSON result of `unread audit`; cli/result.ts says how it is declared. */
import type { AuditUnreadResponse } from "../../admin-api/client.js";
import { resultFrom } from "../result.js";

const unreadDriftResult = resultFrom<AuditUnreadResponse["drifts"][number]>()({
  tenant: "wire",
  user: "wire",
  group: "wire",
  cachedUnread: "wire",
  definitionalUnread: "wire",
  cachedMentions: "wire",
  definitionalMentions: "wire",
});
export type UnreadDriftResult = ReturnType<typeof unreadDriftResult>;

export const unreadAuditResult = resultFrom<AuditUnreadResponse>()({
  sampleRate: "wire",
  idleMs: "u64",
  usersScanned: "wire",
  candidates: "wire",
  sampled: "wire",
  drifted: "wire",
  /** unread_drift_ratio: drifted / sampled. */
  driftRatio: "wire",
  drifts: (r) => r.drifts.map(unreadDriftResult),
});
export type UnreadAuditResult = ReturnType<typeof unreadAuditResult>;
