import { InternalError, splitHexIds, type Uuid } from "../base/index.js";
import type { ConversationKeys } from "../conversation/index.js";
import { defineScript, LUA_STATUS, luaStatus } from "../lua/index.js";

/** The relay's scripts (lua/dispatch/): read RECORDED commits with their frozen audiences, then mark them COMMITTED. */

export interface LoadedCommit {
  conversationSeq: number;
  /** The history entry; null when the seq is no longer RECORDED (an earlier pass committed it). */
  entry: string | null;
  version: number;
  recipients: Uuid[];
}

export const loadForDispatchScript = defineScript({
  name: "loadForDispatch",
  keys: ["commits", "hist", "grpmembers", "grpdeltas", "grpmeta", "vpending"] satisfies (keyof ConversationKeys)[],
  args: (a: { seqs: readonly string[] }) => a.seqs,
  reply: (r): LoadedCommit[] => {
    if (typeof r[0] === "number" && r[0] < 0) throw new InternalError(`loadForDispatch: ${luaStatus(r)} at version ${String(r[1])}`);
    const out: LoadedCommit[] = [];
    for (let i = 0; i < r.length; i += 4) {
      const entry = String(r[i + 1]);
      out.push({ conversationSeq: Number(r[i]), entry: entry === "" ? null : entry, version: Number(r[i + 2]), recipients: splitHexIds(String(r[i + 3])) });
    }
    return out;
  },
});

export const markCommittedScript = defineScript({
  name: "markCommitted",
  keys: ["commits", "outbox", "vpending", "grpdeltas", "lease"] satisfies (keyof ConversationKeys | "lease")[],
  args: (a: { owner: string; token: number; outboxRef: string; seqs: readonly string[] }) => [a.owner, a.token, a.outboxRef, ...a.seqs],
  /** How many seqs were still RECORDED; null when the bucket's lease fenced the call out (nothing written). */
  reply: (r) => (Number(r[0]) === LUA_STATUS.FENCED ? null : Number(r[0])),
});
