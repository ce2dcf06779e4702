import { InternalError } from "../base/index.js";
import { defineScript, luaStatus } from "../lua/index.js";

/** RTC signalling's script (lua/rtc/). */
export type CallStateReply = { status: "OK" | "DUPLICATE" | "RTC_NO_CALL" } | { status: "RTC_BUSY"; callId: string };

export const callStateScript = defineScript({
  name: "callState",
  keys: ["rtccall"],
  args: (a: { op: "ring" | "answer" | "end"; callId: string; mark?: string; ttlMs?: number }) => [a.op, a.callId, a.mark ?? "", a.ttlMs ?? 0],
  reply: (r): CallStateReply => {
    const status = luaStatus(r);
    if (status === "OK" || status === "DUPLICATE" || status === "RTC_NO_CALL") return { status };
    if (status === "RTC_BUSY") return { status, callId: String(r[1]) };
    throw new InternalError(`callState: unexpected status ${status}`);
  },
});
