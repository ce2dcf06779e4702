/** The JSON result of `unread audit`. */
import type { AuditUnreadResponse } from "../../admin-api/client.js";
import { u64 } from "../format.js";

export interface UnreadDriftResult {
  tenant: string;
  user: string;
  group: string;
  cachedUnread: number;
  definitionalUnread: number;
  cachedMentions: number;
  definitionalMentions: number;
}

export interface UnreadAuditResult {
  sampleRate: number;
  idleMs: number;
  usersScanned: number;
  candidates: number;
  sampled: number;
  drifted: number;
  /** unread_drift_ratio: drifted / sampled. */
  driftRatio: number;
  drifts: UnreadDriftResult[];
}

export function unreadAuditResult(r: AuditUnreadResponse): UnreadAuditResult {
  return {
    sampleRate: r.sampleRate, idleMs: u64(r.idleMs), usersScanned: r.usersScanned, candidates: r.candidates, sampled: r.sampled, drifted: r.drifted, driftRatio: r.driftRatio,
    drifts: r.drifts.map((d) => ({ ...d })),
  };
}
