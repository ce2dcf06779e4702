/**
 * The snapshot's order (spec 002 §6.1, PLAN §6.9.3): the pinned zone by pin_rank ASC,
 * last_activity_id DESC, conversation_id ASC, then the normal zone by last_activity_id DESC,
 * conversation_id ASC. One key type and one comparison serve the sort and the keyset cursor, so
 * that "strictly after the cursor" is the same relation the snapshot is sorted by.
 */
import type { SessionRow } from "./rows.js";

export const ZONE = { PINNED: 1, NORMAL: 2 } as const;
export type Zone = (typeof ZONE)[keyof typeof ZONE];

export interface SortKey {
  zone: Zone;
  /** Meaningful in the pinned zone only (0 in the normal zone). */
  pinRank: number;
  /** 32 hex of the latest activity's message id, "" when none (sorts after every id). */
  lastActivityId: string;
  conversation: string;
}

export function sortKey(row: Pick<SessionRow, "pinRank" | "lastActivityId" | "conversation">): SortKey {
  return row.pinRank === null
    ? { zone: ZONE.NORMAL, pinRank: 0, lastActivityId: row.lastActivityId, conversation: row.conversation }
    : { zone: ZONE.PINNED, pinRank: row.pinRank, lastActivityId: row.lastActivityId, conversation: row.conversation };
}

/** Negative when `a` comes first in the list. */
export function compareKeys(a: SortKey, b: SortKey): number {
  if (a.zone !== b.zone) return a.zone - b.zone;
  if (a.zone === ZONE.PINNED && a.pinRank !== b.pinRank) return a.pinRank - b.pinRank;
  if (a.lastActivityId !== b.lastActivityId) return a.lastActivityId < b.lastActivityId ? 1 : -1;
  return a.conversation < b.conversation ? -1 : a.conversation > b.conversation ? 1 : 0;
}

export function compareRows(a: SessionRow, b: SessionRow): number {
  return compareKeys(sortKey(a), sortKey(b));
}
