import { InternalError } from "../base/index.js";
import type { ConversationKeys } from "../conversation/index.js";
import { defineScript, luaStatus } from "../lua/index.js";

/** The reactions' scripts (lua/reactions/), each declared once. */

/** A summary as react-5.lua answers it: version, detail rows, marks alone, this add's mark, then key/count pairs. */
export interface RawSummary {
  version: number;
  detailRows: number;
  markerOnly: number;
  /** This add was counted with the idempotency mark alone (no detail row). */
  marked: boolean;
  counts: { key: string; count: number }[];
}

export type ReactReply =
  | { status: "OK" | "DUPLICATE"; summary: RawSummary }
  | { status: "GROUP_NOT_FOUND" | "SENDER_NOT_MEMBER" | "NO_SUCH_MESSAGE" | "MESSAGE_RECALLED" }
  | { status: "GROUP_DISSOLVED"; dissolvedAt: number }
  | { status: "REACTION_KEYS_FULL"; max: number };

export function rawSummaryOf(r: readonly unknown[], at: number): RawSummary {
  const counts: { key: string; count: number }[] = [];
  for (let i = at + 4; i + 1 < r.length; i += 2) counts.push({ key: String(r[i]), count: Number(r[i + 1]) });
  return { version: Number(r[at]), detailRows: Number(r[at + 1]), markerOnly: Number(r[at + 2]), marked: Number(r[at + 3]) === 1, counts };
}

export const reactScript = defineScript({
  name: "react",
  keys: ["grpmeta", "grpmembers", "hist", "rxsum", "rxwho"] satisfies (keyof ConversationKeys | "rxwho")[],
  args: (a: { userHex: string; seq: number; key: string; add: boolean; nowMs: number; maxMembers: number; maxDetails: number; maxKeys: number }) => [
    a.userHex, a.seq, a.key, a.add ? "+" : "-", a.nowMs, a.maxMembers, a.maxDetails, a.maxKeys,
  ],
  reply: (r): ReactReply => {
    const status = luaStatus(r);
    switch (status) {
      case "OK": case "DUPLICATE": return { status, summary: rawSummaryOf(r, 1) };
      case "GROUP_NOT_FOUND": case "SENDER_NOT_MEMBER": case "NO_SUCH_MESSAGE": case "MESSAGE_RECALLED": return { status };
      case "GROUP_DISSOLVED": return { status, dissolvedAt: Number(r[1]) };
      case "REACTION_KEYS_FULL": return { status, max: Number(r[1]) };
      default: throw new InternalError(`react: unexpected status ${status}`);
    }
  },
});
