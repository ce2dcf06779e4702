import { defineScript, luaStatus } from "../lua/index.js";

/**
 * The delivery module's scripts (lua/delivery/), each declared once: KEYS by name in the order of
 * the script's header, ARGV from named fields, the reply decoded.
 */

/** Fenced compare-and-set of a partition's delivery checkpoint; `fenced` when the lease names another owner or a newer token. */
export const advanceDeliveryCheckpointScript = defineScript({
  name: "advanceDeliveryCheckpoint",
  keys: ["checkpoint", "lease"],
  args: (a: { expected: string | null; to: string; owner: string; token: number }) => [a.expected ?? "", a.to, a.owner, a.token],
  reply: (r) => ({ moved: luaStatus(r) === "OK", fenced: luaStatus(r) === "FENCED", position: String(r[1] ?? "") }),
});
