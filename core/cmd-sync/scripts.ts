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
}

export const advanceCmdStateReadsScript = defineScript({
  name: "advanceCmdStateReads",
  keys: ["state", "unread", "lease"] satisfies (keyof CmdStateKeys)[],
  args: (a: { owner: string; token: number; rows: readonly CmdReadRow[] }) => {
    const out: (string | number)[] = [a.owner, a.token];
    for (const r of a.rows) out.push(r.userRef, String(r.channelType), r.channelId, String(r.readSeq), String(r.updatedAt));
    return out;
  },
  reply: writeReply,
});
