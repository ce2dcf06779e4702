/** The JSON results of the `token` commands (docs/operator-guide.md "Device tokens"); cli/result.ts says how they are declared. */
import type { DeviceToken, IssueTokenResponse, ListTokensResponse, RevokeTokensResponse } from "../../admin-api/client.js";
import { nonEmpty, resultFrom } from "../result.js";

export const deviceTokenResult = resultFrom<DeviceToken>()({
  tenant: "wire",
  user: "wire",
  device: "wire",
  tokenId: "wire",
  issuedAtMs: "u64",
  expiresAtMs: "u64",
  /** The key (kid) that signed it. */
  keyId: "wire",
});
export type DeviceTokenResult = ReturnType<typeof deviceTokenResult>;

const EMPTY_TOKEN: DeviceToken = { tenant: "", user: "", device: "", tokenId: "", issuedAtMs: 0n, expiresAtMs: 0n, keyId: "" };

export const tokenIssueResult = resultFrom<IssueTokenResponse>()({
  /** The signed token (a compact JWS) to hand to the device; null on a dry run. Shown once: the server stores it nowhere. */
  token: (r) => nonEmpty(r.token),
  claims: (r) => deviceTokenResult(r.claims ?? EMPTY_TOKEN),
  dryRun: "wire",
});
export type TokenIssueResult = ReturnType<typeof tokenIssueResult>;

export const tokenRevokeResult = resultFrom<RevokeTokensResponse>()({
  /** "token" (one id) or "device" (every token of a user's device issued up to revokedAtMs). */
  scope: (r) => r.scope as "token" | "device",
  /** The live tokens the revocation covers. */
  tokens: (r) => r.tokens.map(deviceTokenResult),
  /** false: the token already was revoked (a re-run changes nothing). */
  changed: "wire",
  /** The revocation is kept in Redis until then, when every token it covers has expired. */
  keptUntilMs: "u64",
  revokedAtMs: "u64",
  dryRun: "wire",
});
export type TokenRevokeResult = ReturnType<typeof tokenRevokeResult>;

export const tokenListResult = resultFrom<ListTokensResponse & { tenant: string; user: string }>()({
  tenant: "wire",
  user: "wire",
  tokens: (r) => r.tokens.map(deviceTokenResult),
  /** Give it to --page-token for the next page; null on the last page. */
  nextPageToken: "text or null",
});
export type TokenListResult = ReturnType<typeof tokenListResult>;

/** `token keygen`: what was written (never a key's private part). */
export interface TokenKeygenResult {
  file: string;
  /** The new key's id: it signs from now on. */
  keyId: string;
  alg: "EdDSA" | "ES256";
  /** The key ids in the file after the change, newest (signing) first. */
  keys: string[];
  /** Key ids that left the file: tokens they signed no longer verify. */
  dropped: string[];
  /** The public key set written beside it (--public), or null. */
  publicFile: string | null;
  dryRun: boolean;
}
