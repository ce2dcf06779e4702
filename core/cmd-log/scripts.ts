import { InternalError } from "../base/index.js";
import { defineScript, luaStatus } from "../lua/index.js";

/** The CMD log's scripts (lua/cmd-sync/*Cmd*.lua), each declared once. */

export type CommitCmdReply =
  | { status: "OK"; seq: number; timestampMs: number; recipientsHex: string }
  /** entry "" when retention removed it (every recipient had acknowledged it); idem the stored value "seq|timestampMs|messageIdHex" (or "seq" from before). */
  | { status: "DUPLICATE"; seq: number; entry: string; idem: string }
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
      case "DUPLICATE": return { status, seq: Number(r[1]), entry: String(r[2] ?? ""), idem: String(r[3] ?? "") };
      case "GROUP_NOT_FOUND": return { status };
      case "GROUP_DISSOLVED": return { status, dissolvedAt: Number(r[1]) };
      case "CMD_TOO_MANY_RECIPIENTS": return { status, count: Number(r[1]) };
      default: throw new InternalError(`commitCmd: unexpected status ${status}`);
    }
  },
});
