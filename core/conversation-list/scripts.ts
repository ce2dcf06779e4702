import { defineScript, luaStatus } from "../lua/index.js";
import type { ListKeys } from "./keys.js";

/** The conversation list's scripts (lua/conversation-list/), each declared once. */

export interface RecomputeReply {
  status: "OK" | "NOT_VISIBLE";
  joinedAt: number;
  leftAt: number | null;
  state: "A" | "L" | "R";
  readSeq: number;
  headSeq: number;
  /** 32 hex; "" when the user sees no record. */
  headMessageId: string;
  headCreatedAt: number;
  unread: number;
  exact: boolean;
  mentions: number;
  mentionFirst: number | null;
  /** The seq of the head record (headMessageId): the newest that moves the conversation; 0 when none. headSeq may be newer (a recall event). */
  activitySeq: number;
}

/** The definitional row from the conversation's own keys (its {bNNN} tag). */
export const recomputeUnreadScript = defineScript({
  name: "recomputeUnread",
  keys: ["grpmembers", "hist", "readseq", "grpmeta", "unreadidx"],
  args: (a: { user: string; hidden: number; deleted: number; cap: number }) => [a.user, a.hidden, a.deleted, a.cap],
  reply: (r): RecomputeReply => {
    if (luaStatus(r) !== "OK") {
      return { status: "NOT_VISIBLE", joinedAt: 0, leftAt: null, state: "R", readSeq: 0, headSeq: 0, headMessageId: "", headCreatedAt: 0, unread: 0, exact: true, mentions: 0, mentionFirst: null, activitySeq: 0 };
    }
    return {
      status: "OK",
      joinedAt: Number(r[1]),
      leftAt: Number(r[2]) < 0 ? null : Number(r[2]),
      state: String(r[3]) as "A" | "L" | "R",
      readSeq: Number(r[4]),
      headSeq: Number(r[5]),
      headMessageId: String(r[6] ?? ""),
      headCreatedAt: Number(r[7]),
      unread: Number(r[8]),
      exact: Number(r[9]) === 1,
      mentions: Number(r[10]),
      mentionFirst: Number(r[11]) < 0 ? null : Number(r[11]),
      // absent from a node of the code before issue 29: the head was the newest record
      activitySeq: r[12] === undefined ? Number(r[5]) : Number(r[12]),
    };
  },
});

export interface RowWrite {
  conversationHex: string;
  /** The stored row the new one was computed from ("" = none). */
  expected: string;
  /** The row without its version and driving event (row.ts encodeRowCore); ignored when !keep. */
  row: string;
  keep: boolean;
  /** "" = the user's choices are unchanged. */
  prefs: string;
}

export type ApplyRowsReply =
  | { status: "OK"; version: number; totalUnread: number; totalMention: number; mutedUnread: number }
  | { status: "ROW_MOVED"; index: number };

export const applyRowsScript = defineScript({
  name: "applyRows",
  keys: ["rows", "badge", "prefs", "version"] satisfies (keyof ListKeys)[],
  args: (a: { includeMuted: boolean; drivingEventId: string; fullBadge: boolean; writes: readonly RowWrite[] }) => {
    const out: (string | number)[] = [a.includeMuted ? 1 : 0, a.drivingEventId, a.fullBadge ? 1 : 0];
    for (const w of a.writes) out.push(w.conversationHex, w.expected, w.keep ? w.row : "", w.keep ? 1 : 0, w.prefs);
    return out;
  },
  reply: (r): ApplyRowsReply => {
    if (luaStatus(r) === "OK") return { status: "OK", version: Number(r[1]), totalUnread: Number(r[2]), totalMention: Number(r[3]), mutedUnread: Number(r[4]) };
    return { status: "ROW_MOVED", index: Number(r[1]) - 1 };
  },
});

/** true when the checkpoint moved from `expected` to `to`. */
export const advanceListCheckpointScript = defineScript({
  name: "advanceListCheckpoint",
  keys: ["checkpoint"],
  args: (a: { expected: string; to: string }) => [a.expected, a.to],
  reply: (r) => Number(r[0]) === 1,
});

/** The stored half of a user's live view (lua/conversation-list/readLiveView-4.lua): one call, not a MULTI. */
export interface LiveViewRead {
  /** The badge hash (empty: none stored). */
  badge: Record<string, string>;
  version: number;
  /** The stored rows asked for, in order (null: none). */
  rows: (string | null)[];
  /** The prefs asked for, in order (null: none). */
  prefs: (string | null)[];
}

export const readLiveViewScript = defineScript({
  name: "readLiveView",
  keys: ["badge", "version", "rows", "prefs"] satisfies (keyof ListKeys)[],
  args: (a: { draw: boolean; rows: readonly string[]; prefs: readonly string[] }) => [a.draw ? 1 : 0, a.rows.length, ...a.rows, ...a.prefs],
  reply: (r): LiveViewRead => {
    const flat = (r[0] ?? []) as string[];
    const badge: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) badge[flat[i]!] = flat[i + 1]!;
    return { badge, version: Number(r[1]), rows: (r[2] ?? []) as (string | null)[], prefs: (r[3] ?? []) as (string | null)[] };
  },
});
