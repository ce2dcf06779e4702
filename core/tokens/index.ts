/**
 * Device tokens (issue 27): signed with jose (EdDSA or ES256, key ids, two active keys for
 * rotation), issued and revoked through the admin API, verified once per token by the client
 * gateway with a bounded cache and a revocation read per verify. Owns the `tokens`, `tokmeta`,
 * `tokrev`, `tokdevrev` keys on the user's `{uNNN}` tag and `tokref` on the token id's, and the
 * scripts of lua/tokens/. docs/operator-guide.md "Device tokens" is the operator's side.
 */
export { parseDeviceId, TOKEN_ISSUER, TOKEN_TYPE, TokenRefusedError, type DeviceClaims, type TokenRefusal } from "./claims.js";
export { parseTokenTtl, TokenIssuer, type IssuedToken, type RevokeResult, type TokenIssuerOptions } from "./issuer.js";
export {
  generateTokenKey, parseTokenKeySet, publicTokenKeys, rotateTokenKeys, staticTokenKeys, TOKEN_ALGORITHMS, TOKEN_KEYS_RECHECK_MS, TokenKeyFile, TokenKeySet,
  type TokenAlgorithm, type TokenKey, type TokenKeySource,
} from "./key-set.js";
export { tokenRefKey, userTokenKeys, type UserTokenKeys } from "./keys.js";
export { tokenMetrics } from "./metrics.js";
export { DeviceTokens, type DeviceTokensOptions } from "./tokens.js";
export { TokenVerifier, type TokenVerifierOptions } from "./verifier.js";
