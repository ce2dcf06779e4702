import { InternalError } from "../base/index.js";
import { defineScript, luaStatus } from "../lua/index.js";

/** The device tokens' scripts (lua/tokens/), each declared once. */

export type RecordTokenReply = { status: "OK"; live: number } | { status: "TOKENS_FULL"; live: number };

export const recordTokenScript = defineScript({
  name: "recordToken",
  keys: ["tokens", "meta"],
  args: (a: { nowMs: number; tokenId: string; expiresAtMs: number; meta: string; max: number }) => [a.nowMs, a.tokenId, a.expiresAtMs, a.meta, a.max],
  reply: (r): RecordTokenReply => {
    const status = luaStatus(r);
    if (status === "OK" || status === "TOKENS_FULL") return { status, live: Number(r[1]) };
    throw new InternalError(`recordToken: unexpected status ${status}`);
  },
});

export const revokeTokenScript = defineScript({
  name: "revokeToken",
  keys: ["tokens", "meta", "revoked"],
  args: (a: { nowMs: number; tokenId: string; expiresAtMs: number }) => [a.nowMs, a.tokenId, a.expiresAtMs],
  reply: (r): { newlyRevoked: boolean } => {
    if (luaStatus(r) !== "OK") throw new InternalError(`revokeToken: unexpected status ${String(r[0])}`);
    return { newlyRevoked: Number(r[1]) === 1 };
  },
});

export const revokeDeviceScript = defineScript({
  name: "revokeDevice",
  keys: ["tokens", "meta", "deviceRevoked"],
  args: (a: { nowMs: number; device: string; ttlMaxMs: number }) => [a.nowMs, a.device, a.ttlMaxMs],
  reply: (r): { revokedAtMs: number; removed: { tokenId: string; meta: string }[] } => {
    if (luaStatus(r) !== "OK") throw new InternalError(`revokeDevice: unexpected status ${String(r[0])}`);
    const removed: { tokenId: string; meta: string }[] = [];
    for (let i = 2; i + 1 < r.length; i += 2) removed.push({ tokenId: String(r[i]), meta: String(r[i + 1]) });
    return { revokedAtMs: Number(r[1]), removed };
  },
});
