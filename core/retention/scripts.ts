import { InternalError } from "../base/index.js";
import { defineScript, LUA_STATUS } from "../lua/index.js";

/** The retention module's scripts (lua/retention/), each declared once; the headers document every key and argument. */

export type TrimReply =
  | { status: "OK"; earliestBefore: number; earliestAfter: number; histRemoved: number; idxRemoved: number; idemRemoved: number; more: boolean }
  | { status: "SKIPPED"; earliest: number; reason: "pending" | "nogroup" }
  | { status: "FENCED" };

export const trimConversationScript = defineScript({
  name: "trimConversation",
  keys: ["lease", "grpmeta", "cseq", "hist", "unreadidx", "vpending", "commits", "fanoutPending", "idem"] as const,
  args: (a: { owner: string; token: number; outboxRef: string; nowMs: number; maxAgeMs: number; maxCount: number; budget: number; dryRun: boolean }) =>
    [a.owner, a.token, a.outboxRef, a.nowMs, a.maxAgeMs, a.maxCount, a.budget, a.dryRun ? 1 : 0],
  reply: (r): TrimReply => {
    const code = Number(r[0]);
    if (code === LUA_STATUS.FENCED) return { status: "FENCED" };
    if (code === 1) return { status: "SKIPPED", earliest: Number(r[1]), reason: String(r[2]) as "pending" | "nogroup" };
    if (code !== 0) throw new InternalError(`trimConversation answered ${String(r[0])}`);
    return {
      status: "OK", earliestBefore: Number(r[1]), earliestAfter: Number(r[2]),
      histRemoved: Number(r[3]), idxRemoved: Number(r[4]), idemRemoved: Number(r[5]), more: Number(r[6]) === 1,
    };
  },
});

export type CmdTrimReply =
  | { status: "OK"; histRemoved: number; idemRemoved: number; more: boolean; histLeft: number; idemLeft: number }
  | { status: "FENCED" };

export const trimCmdHistoryScript = defineScript({
  name: "trimCmdHistory",
  keys: ["lease", "cmdseq", "cmdhist", "cmdidem", "cmdtrim"] as const,
  /** ackedThrough: the highest seq every recipient of every entry up to it has acknowledged (0: none). */
  args: (a: { owner: string; token: number; channelRef: string; nowMs: number; maxAgeMs: number; maxCount: number; budget: number; dryRun: boolean; ackedThrough: number }) =>
    [a.owner, a.token, a.channelRef, a.nowMs, a.maxAgeMs, a.maxCount, a.budget, a.dryRun ? 1 : 0, a.ackedThrough],
  reply: (r): CmdTrimReply => {
    const code = Number(r[0]);
    if (code === LUA_STATUS.FENCED) return { status: "FENCED" };
    if (code !== 0) throw new InternalError(`trimCmdHistory answered ${String(r[0])}`);
    return { status: "OK", histRemoved: Number(r[1]), idemRemoved: Number(r[2]), more: Number(r[3]) === 1, histLeft: Number(r[4]), idemLeft: Number(r[5]) };
  },
});
