import { commitBucket, userTag, uuidToHex, type KeySpace, type Uuid } from "../base/index.js";

/**
 * A user's device-token keys (issue 27, docs/operator-guide.md "Device tokens"), all on the user's
 * `{uNNN}` tag, so that the verifier's revocation check is one MGET on one instance and each
 * change is one script. Every key has an expiry; nothing outlives the tokens it is about:
 *   tokens     zset    score expiresAt ms, member tokenId: the user's live issued tokens (at most
 *                      TOKENS_PER_USER_MAX), expires with the latest of them
 *   tokmeta    hash    tokenId → "device|issuedAtMs|expiresAtMs|keyId", the same members, same expiry
 *   tokrev     string  one revoked token ("1"), expires when the token does
 *   tokdevrev  string  a revoked device: the ms at which it was revoked (tokens issued at or before
 *                      it are refused), expires TOKEN_TTL_MAX_MS after that
 */
export interface UserTokenKeys {
  tag: string;
  tokens: string;
  meta: string;
  /** The revocation mark of one token. */
  revoked: (tokenId: string) => string;
  /** The revocation mark of one device. */
  deviceRevoked: (device: string) => string;
}

export function userTokenKeys(space: KeySpace, tenant: Uuid, user: Uuid): UserTokenKeys {
  const tag = userTag(commitBucket(tenant, user));
  const ref = `${uuidToHex(tenant)}:${uuidToHex(user)}`;
  return {
    tag,
    tokens: space.key(tag, "tokens", ref),
    meta: space.key(tag, "tokmeta", ref),
    revoked: (tokenId) => space.key(tag, "tokrev", `${ref}:${tokenId}`),
    deviceRevoked: (device) => space.key(tag, "tokdevrev", `${ref}:${device}`),
  };
}

/**
 * Where a token id leads (its user, device and expiry), so that `token revoke --token-id` needs no
 * user: a string on the token id's own tag (commitBucket(tenant, tokenId)), expiring with the token.
 * Value "userHex|device|expiresAtMs".
 */
export function tokenRefKey(space: KeySpace, tenant: Uuid, tokenId: Uuid): { tag: string; key: string } {
  const tag = userTag(commitBucket(tenant, tokenId));
  return { tag, key: space.key(tag, "tokref", `${uuidToHex(tenant)}:${uuidToHex(tokenId)}`) };
}
