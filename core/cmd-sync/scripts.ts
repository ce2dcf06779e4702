import { defineScript, defineVariadicScript, luaStatus } from "../lua/index.js";
import type { CmdStateKeys } from "./keys.js";

/** The durable CMD state's scripts (lua/cmd-sync/*State*), each declared once. */

export type CmdStateWriteReply = { fenced: true; rows: 0 } | { fenced: false; rows: number };

const writeReply = (r: unknown[]): CmdStateWriteReply =>
  (luaStatus(r) === "FENCED" ? { fenced: true, rows: 0 } : { fenced: false, rows: Number(r[1]) });

/** One row of upsertCmdStates: numbers as decimal strings (the script max-merges them as such). */
export interface CmdStateRow {
  userRef: string;
  channelType: number;
  channelId: string;
  readSeq: number;
  deletedToSeq: number;
  activeAt: number;
  updatedAt: number;
  lastMsgSeq: number;
}

export const upsertCmdStatesScript = defineScript({
  name: "upsertCmdStates",
  keys: ["state", "index", "unread", "lease"] satisfies (keyof CmdStateKeys)[],
  args: (a: { owner: string; token: number; rows: readonly CmdStateRow[] }) => {
    const out: (string | number)[] = [a.owner, a.token];
    for (const r of a.rows) out.push(r.userRef, String(r.channelType), r.channelId, String(r.readSeq), String(r.deletedToSeq), String(r.activeAt), String(r.updatedAt), String(r.lastMsgSeq));
    return out;
  },
  reply: writeReply,
});

export interface CmdReadRow {
  userRef: string;
  channelType: number;
  channelId: string;
  readSeq: number;
  updatedAt: number;
  /** The end a sync found of a row whose last seq was unknown (the old code's four fields); undefined: none. */
  lastMsgSeq?: number;
}

export const advanceCmdStateReadsScript = defineScript({
  name: "advanceCmdStateReads",
  keys: ["state", "unread", "lease"] satisfies (keyof CmdStateKeys)[],
  args: (a: { owner: string; token: number; rows: readonly CmdReadRow[] }) => {
    const out: (string | number)[] = [a.owner, a.token];
    for (const r of a.rows) out.push(r.userRef, String(r.channelType), r.channelId, String(r.readSeq), String(r.updatedAt), r.lastMsgSeq === undefined ? "" : String(r.lastMsgSeq));
    return out;
  },
  reply: writeReply,
});

export type CmdIndexLegacyReply = { fenced: true } | { fenced: false; looked: number; indexed: number; next: string };

/** One chunk of a user's rows of the old code into cmdunread (lua/cmd-sync/indexLegacyCmdStates-5.lua); next "" once the user is marked. */
export const indexLegacyCmdStatesScript = defineScript({
  name: "indexLegacyCmdStates",
  keys: ["state", "index", "unread", "indexed", "lease"] satisfies (keyof CmdStateKeys)[],
  args: (a: { owner: string; token: number; userRef: string; cursor: string; count: number }) => [a.owner, a.token, a.userRef, a.cursor, a.count],
  reply: (r: unknown[]): CmdIndexLegacyReply =>
    (luaStatus(r) === "FENCED" ? { fenced: true } : { fenced: false, looked: Number(r[1]), indexed: Number(r[2]), next: String(r[3]) }),
});

/** The catch-up scan's scripts (lua/cmd-sync/*CmdRecent*, raiseCmdFlushPoint): they read the CMD log's recent-commit index and raise a slot's flush point. */

export type RaiseFlushPointReply = { status: "OK"; stored: number } | { status: "FENCED" };

export const raiseCmdFlushPointScript = defineScript({
  name: "raiseCmdFlushPoint",
  keys: ["flushpt", "lease"],
  args: (a: { owner: string; token: number; at: number }) => [a.owner, a.token, a.at],
  reply: (r): RaiseFlushPointReply => (luaStatus(r) === "OK" ? { status: "OK", stored: Number(r[1]) } : { status: "FENCED" }),
});

export interface RecentPage {
  /** The instance's clock when the page was read (ms). */
  nowMs: number;
  entries: { member: string; score: number }[];
}

export const scanCmdRecentScript = defineScript({
  name: "scanCmdRecent",
  keys: ["recent"],
  args: (a: { min: number; limit: number }) => [a.min, a.limit],
  reply: (r): RecentPage => {
    const entries: RecentPage["entries"] = [];
    for (let i = 1; i + 1 < r.length; i += 2) entries.push({ member: String(r[i]), score: Number(r[i + 1]) });
    return { nowMs: Number(r[0]), entries };
  },
});

/** One bucket's first page in a round: its cmdrecent key, the min score (inclusive) and the page size. */
export interface RecentScan {
  recent: string;
  min: number;
  limit: number;
}

/**
 * The first page of many buckets on one instance (one hash tag on a Redis Cluster), with one
 * clock read: what scanCmdRecent gives for each, in one call. Pages in the order of the scans.
 */
export const scanCmdRecentsScript = defineVariadicScript({
  name: "scanCmdRecents",
  itemKeys: (s: RecentScan) => [s.recent],
  itemArgs: (s: RecentScan) => [s.min, s.limit],
  reply: (r): RecentPage[] => {
    const nowMs = Number(r[0]);
    const pages: RecentPage[] = [];
    for (let i = 1; i < r.length;) {
      const n = Number(r[i++]);
      const entries: RecentPage["entries"] = [];
      for (let j = 0; j < n; j++, i += 2) entries.push({ member: String(r[i]), score: Number(r[i + 1]) });
      pages.push({ nowMs, entries });
    }
    return pages;
  },
});
