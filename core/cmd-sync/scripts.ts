import { defineScript, luaStatus } from "../lua/index.js";
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
