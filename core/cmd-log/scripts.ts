import { InternalError } from "../base/index.js";
import { defineScript, defineVariadicScript, luaStatus } from "../lua/index.js";

/** The CMD log's scripts (lua/cmd-sync/*Cmd*.lua), each declared once. */

export type CommitCmdReply =
  | { status: "OK"; seq: number; timestampMs: number; recipientsHex: string }
  | { status: "DUPLICATE"; seq: number; entry: string }
  | { status: "GROUP_NOT_FOUND" }
  | { status: "GROUP_DISSOLVED"; dissolvedAt: number }
  | { status: "CMD_TOO_MANY_RECIPIENTS"; count: number };

export const commitCmdScript = defineScript({
  name: "commitCmd",
  keys: ["seq", "hist", "idem", "recent", "grpmembers", "grpmeta"],
  args: (a: {
    groupSourced: boolean; clientMsgNo: string; messageIdHex: string; flags: number; fromHex: string; clientMsgNoB64: string;
    payloadB64: string; recentRef: string; retentionMs: number; maxRecipients: number; recipientsHex: string;
  }) => [
    a.groupSourced ? "g" : "r", a.clientMsgNo, a.messageIdHex, a.flags, a.fromHex, a.clientMsgNoB64, a.payloadB64, a.recentRef, a.retentionMs,
    a.maxRecipients, a.groupSourced ? "" : a.recipientsHex,
  ],
  reply: (r): CommitCmdReply => {
    const status = luaStatus(r);
    switch (status) {
      case "OK": return { status, seq: Number(r[1]), timestampMs: Number(r[2]), recipientsHex: String(r[3] ?? "") };
      case "DUPLICATE": return { status, seq: Number(r[1]), entry: String(r[2] ?? "") };
      case "GROUP_NOT_FOUND": return { status };
      case "GROUP_DISSOLVED": return { status, dissolvedAt: Number(r[1]) };
      case "CMD_TOO_MANY_RECIPIENTS": return { status, count: Number(r[1]) };
      default: throw new InternalError(`commitCmd: unexpected status ${status}`);
    }
  },
});

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
