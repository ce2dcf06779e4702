import { createHash } from "node:crypto";
import * as jose from "jose";
import { parseUuid, TOKEN_MAX_CHARS, TOKEN_VERIFY_CACHE_MAX, type KeySpace, type Uuid } from "../base/index.js";
import type { RedisStore } from "../store/index.js";
import { parseDeviceId, TOKEN_ISSUER, TOKEN_TYPE, TokenRefusedError, type DeviceClaims } from "./claims.js";
import { userTokenKeys } from "./keys.js";
import type { TokenKeySource } from "./key-set.js";
import { tokenMetrics } from "./metrics.js";

export interface TokenVerifierOptions {
  store: RedisStore;
  keys: KeySpace;
  source: TokenKeySource;
  /** The clock, ms since the epoch (tests inject one; never sleep for an expiry). */
  now?: () => number;
  /** Verified tokens kept (default TOKEN_VERIFY_CACHE_MAX). */
  cacheMax?: number;
}

/**
 * Verifies device tokens (issue 27), once per token string: a verified token's claims are kept in a
 * bounded LRU cache (at most `cacheMax` entries), and concurrent verifies of a token not yet cached
 * share one check, so that a reconnect storm of one device does not check the same signature 10,000
 * times. Both are keyed by the token's SHA-256, not the token: the cache holds no bearer token that
 * a heap dump would give away, and 43 characters per entry where the token (kept with the whole
 * `Authorization` header it was cut from) was about 500 bytes. What a cached entry never skips:
 * - its expiry, checked against the clock on every verify (an entry never outlives its token);
 * - revocation: every verify, cached or not, reads the token's and its device's revocation marks in
 *   one MGET on the user's instance (both keys share the user's tag), so a revocation written by any
 *   node counts from the next connection on, and it drops the entry;
 * - the key set: when it changes (a rotation, a removed key) the cache is emptied, so a token of a
 *   removed key stops verifying at once.
 */
export class TokenVerifier {
  /** Verified claims by tokenKey(token). */
  private readonly cache = new Map<string, DeviceClaims>();
  /** Signature checks in flight, by tokenKey(token) (at most one per token; as many entries as verifies in flight). */
  private readonly checking = new Map<string, Promise<DeviceClaims>>();
  private readonly now: () => number;
  private readonly cacheMax: number;
  private keysVersion: number;

  constructor(private readonly o: TokenVerifierOptions) {
    this.now = o.now ?? Date.now;
    this.cacheMax = o.cacheMax ?? TOKEN_VERIFY_CACHE_MAX;
    this.keysVersion = o.source.version;
  }

  /** Tokens held by the cache. */
  get cached(): number {
    return this.cache.size;
  }

  /**
   * The claims of a valid token, or a TokenRefusedError: TOKEN_INVALID (malformed, unknown key, bad
   * signature, another issuer or type, `tenant` given and not the token's), TOKEN_EXPIRED,
   * TOKEN_REVOKED. Store failures propagate as they are (UNAVAILABLE): a node that cannot read
   * revocations does not let devices in.
   */
  async verify(token: string, opts: { tenant?: Uuid } = {}): Promise<DeviceClaims> {
    let path: "cold" | "cached" = "cold";
    try {
      if (typeof token !== "string" || token.length === 0 || token.length > TOKEN_MAX_CHARS) {
        throw new TokenRefusedError("TOKEN_INVALID", `a device token is a non-empty string of at most ${TOKEN_MAX_CHARS} characters`);
      }
      const keys = await this.o.source.current();
      if (this.o.source.version !== this.keysVersion) {
        this.keysVersion = this.o.source.version;
        this.cache.clear();
      }
      const key = tokenKey(token);
      let claims = this.cache.get(key);
      if (claims !== undefined) {
        path = "cached";
        if (this.now() >= claims.expiresAt) {
          this.cache.delete(key);
          throw new TokenRefusedError("TOKEN_EXPIRED", `device token ${claims.tokenId} expired at ${new Date(claims.expiresAt).toISOString()}`, { tokenId: claims.tokenId });
        }
      } else {
        // single flight: the verifies of one token that arrive while its signature is being checked
        // (a reconnect storm lands all at once) wait for that one check instead of each doing it
        let check = this.checking.get(key);
        if (check === undefined) {
          // cached as soon as the signature holds, before the revocation read: a verify that comes
          // in meanwhile finds it (its revocation is read on every use, and a revoked one is dropped)
          check = this.checkSignature(token, keys).then((c) => { this.remember(key, c); return c; }).finally(() => this.checking.delete(key));
          this.checking.set(key, check);
        } else {
          path = "cached";
        }
        claims = await check;
      }
      if (opts.tenant !== undefined && opts.tenant !== claims.tenant) {
        throw new TokenRefusedError("TOKEN_INVALID", "the device token is for another tenant");
      }
      try {
        await this.checkRevoked(claims);
      } catch (err) {
        this.cache.delete(key);
        throw err;
      }
      this.remember(key, claims);
      tokenMetrics.verifications.inc({ result: "ok", path });
      return claims;
    } catch (err) {
      if (err instanceof TokenRefusedError) {
        tokenMetrics.verifications.inc({ result: err.code === "TOKEN_INVALID" ? "invalid" : err.code === "TOKEN_EXPIRED" ? "expired" : "revoked", path });
        tokenMetrics.cacheEntries.set(this.cache.size);
      }
      throw err;
    }
  }

  /** Puts a token (by its tokenKey) last in the LRU order, evicting the least recently used past the bound. */
  private remember(key: string, claims: DeviceClaims): void {
    this.cache.delete(key);
    this.cache.set(key, claims);
    if (this.cache.size > this.cacheMax) this.cache.delete(this.cache.keys().next().value!);
    tokenMetrics.cacheEntries.set(this.cache.size);
  }

  /** Drops a token from the cache (a connection's token found revoked elsewhere). */
  forget(token: string): void {
    this.cache.delete(tokenKey(token));
  }

  /** Whether the cache holds `token` (by its key; tests). */
  holds(token: string): boolean {
    return this.cache.has(tokenKey(token));
  }

  private async checkSignature(token: string, keys: Awaited<ReturnType<TokenKeySource["current"]>>): Promise<DeviceClaims> {
    let header: jose.ProtectedHeaderParameters;
    try {
      header = jose.decodeProtectedHeader(token);
    } catch {
      throw new TokenRefusedError("TOKEN_INVALID", "the device token is malformed (not a compact JWS)");
    }
    const kid = header.kid;
    const key = typeof kid === "string" ? keys.key(kid) : undefined;
    if (key === undefined) throw new TokenRefusedError("TOKEN_INVALID", `the device token's key ${typeof kid === "string" ? JSON.stringify(kid.slice(0, 64)) : "(none)"} is not an active key`);
    let payload: jose.JWTPayload;
    try {
      ({ payload } = await jose.jwtVerify(token, key.verifyKey, {
        algorithms: [key.alg], issuer: TOKEN_ISSUER, typ: TOKEN_TYPE, currentDate: new Date(this.now()), clockTolerance: 0,
        requiredClaims: ["sub", "jti", "exp", "iat", "tid", "dev", "ims"],
      }));
    } catch (err) {
      if (err instanceof jose.errors.JWTExpired) {
        throw new TokenRefusedError("TOKEN_EXPIRED", `the device token expired${typeof err.payload.exp === "number" ? ` at ${new Date(err.payload.exp * 1000).toISOString()}` : ""}`);
      }
      const why = err instanceof jose.errors.JWSSignatureVerificationFailed ? "its signature does not verify"
        : err instanceof jose.errors.JOSEAlgNotAllowed ? `its algorithm is not its key's (${key.alg})`
        : err instanceof jose.errors.JWTClaimValidationFailed ? `its claim ${err.claim} is not valid (${err.reason})`
        : "it is malformed";
      throw new TokenRefusedError("TOKEN_INVALID", `the device token is refused: ${why}`);
    }
    try {
      return {
        tenant: parseUuid(payload.tid, "tid"),
        user: parseUuid(payload.sub, "sub"),
        device: parseDeviceId(payload.dev, "dev"),
        tokenId: parseUuid(payload.jti, "jti"),
        expiresAt: (payload.exp as number) * 1000,
        keyId: key.kid,
        issuedAt: checkMs(payload.ims),
      };
    } catch {
      throw new TokenRefusedError("TOKEN_INVALID", "the device token is refused: its claims are not a device's");
    }
  }

  private async checkRevoked(c: DeviceClaims): Promise<void> {
    const k = userTokenKeys(this.o.keys, c.tenant, c.user);
    const [token, device] = await this.o.store.clientFor(k.tag).mget(k.revoked(c.tokenId), k.deviceRevoked(c.device));
    if (token !== null) throw new TokenRefusedError("TOKEN_REVOKED", `device token ${c.tokenId} was revoked`, { tokenId: c.tokenId });
    if (device !== null && Number(device) >= c.issuedAt) {
      throw new TokenRefusedError("TOKEN_REVOKED", `device ${c.device}'s tokens issued up to ${new Date(Number(device)).toISOString()} were revoked`, { tokenId: c.tokenId });
    }
  }
}

function checkMs(v: unknown): number {
  if (typeof v !== "number" || !Number.isSafeInteger(v) || v < 0) throw new Error("ims");
  return v;
}

/** A token's cache key: its SHA-256, base64url (a fresh 43-character string, holding nothing of the token). */
function tokenKey(token: string): string {
  return createHash("sha256").update(token).digest("base64url");
}
