import { randomUUID } from "node:crypto";
import * as jose from "jose";
import {
  FailedPreconditionError, InvalidArgumentError, NotFoundError, pageLimit, TOKEN_LIST_PAGE, TOKEN_TTL_MAX_MS, TOKEN_TTL_MIN_MS,
  TOKENS_PER_USER_MAX, uuidToHex, hexToUuid, type KeySpace, type Uuid,
} from "../base/index.js";
import type { RedisStore } from "../store/index.js";
import { TOKEN_ISSUER, TOKEN_TYPE, type DeviceClaims } from "./claims.js";
import { tokenRefKey, userTokenKeys } from "./keys.js";
import type { TokenKeySource } from "./key-set.js";
import { tokenMetrics } from "./metrics.js";
import { recordTokenScript, revokeDeviceScript, revokeTokenScript } from "./scripts.js";

export interface TokenIssuerOptions {
  store: RedisStore;
  keys: KeySpace;
  source: TokenKeySource;
  /** The clock, ms since the epoch (tests inject one). */
  now?: () => number;
}

/** One issued token as listed or revoked (never the token string: it is shown once, when issued). */
export interface IssuedToken {
  tenant: Uuid;
  user: Uuid;
  device: string;
  tokenId: string;
  issuedAt: number;
  expiresAt: number;
  keyId: string;
}

export interface RevokeResult {
  scope: "token" | "device";
  /** The tokens taken off the user's list (by device: every one of the device's live tokens); at most TOKENS_PER_USER_MAX. */
  tokens: IssuedToken[];
  /** false: the token already was revoked (a re-run); by device, always true (the mark moves to now). */
  changed: boolean;
  /** Until when the revocation mark is kept (the token's expiry; by device, TOKEN_TTL_MAX_MS after the revocation). */
  keptUntil: number;
  /** By device: tokens issued at or before this instant are refused. By token: its issue time. */
  revokedAt: number;
  dryRun: boolean;
}

/** A TTL as a request gives it: 0 → the default; outside [TOKEN_TTL_MIN_MS, TOKEN_TTL_MAX_MS] refused. */
export function parseTokenTtl(ms: number, defaultMs: number, field = "ttl_ms"): number {
  if (ms === 0) return defaultMs;
  if (!Number.isSafeInteger(ms) || ms < TOKEN_TTL_MIN_MS || ms > TOKEN_TTL_MAX_MS) {
    throw new InvalidArgumentError(field, `${field} must be from ${TOKEN_TTL_MIN_MS / 1000} s to ${TOKEN_TTL_MAX_MS / 86_400_000} days (TOKEN_TTL_MAX_MS), got ${ms} ms`);
  }
  return ms;
}

function metaOf(t: Pick<IssuedToken, "device" | "issuedAt" | "expiresAt" | "keyId">): string {
  return `${t.device}|${t.issuedAt}|${t.expiresAt}|${t.keyId}`;
}

function tokenOf(tenant: Uuid, user: Uuid, tokenId: string, meta: string): IssuedToken {
  const [device = "", issuedAt = "0", expiresAt = "0", keyId = ""] = meta.split("|");
  return { tenant, user, device, tokenId, issuedAt: Number(issuedAt), expiresAt: Number(expiresAt), keyId };
}

/**
 * Issues, revokes and lists device tokens (issue 27). A token is a compact JWS (JWT) signed with the
 * key set's newest key: header {alg, kid, typ "qim-device+jwt"}, claims iss "qim", sub user, tid
 * tenant, dev device, jti token id (a UUID), iat/exp (s) and ims (issue time in ms, what a device
 * revocation compares). Each issued token is recorded in its user's bounded list and under its id
 * (for `revoke --token-id`), each with the token's expiry; the token string itself is stored nowhere.
 */
export class TokenIssuer {
  private readonly now: () => number;
  constructor(private readonly o: TokenIssuerOptions) {
    this.now = o.now ?? Date.now;
  }

  async issue(req: { tenant: Uuid; user: Uuid; device: string; ttlMs: number; dryRun?: boolean }): Promise<{ token: string; claims: DeviceClaims; dryRun: boolean }> {
    const signer = (await this.o.source.current()).signer();
    const issuedAt = this.now();
    // exp is whole seconds (RFC 7519): the claims say exactly what the token says
    const expiresAt = Math.floor((issuedAt + req.ttlMs) / 1000) * 1000;
    const tokenId = randomUUID();
    const claims: DeviceClaims = { tenant: req.tenant, user: req.user, device: req.device, tokenId, expiresAt, keyId: signer.kid, issuedAt };
    if (req.dryRun) return { token: "", claims, dryRun: true };
    const token = await new jose.SignJWT({ tid: req.tenant, dev: req.device, ims: issuedAt })
      .setProtectedHeader({ alg: signer.alg, kid: signer.kid, typ: TOKEN_TYPE })
      .setIssuer(TOKEN_ISSUER).setSubject(req.user).setJti(tokenId)
      .setIssuedAt(Math.floor(issuedAt / 1000)).setExpirationTime(expiresAt / 1000)
      .sign(signer.signKey);
    const k = userTokenKeys(this.o.keys, req.tenant, req.user);
    const r = await recordTokenScript.run(this.o.store.clientFor(k.tag), k, {
      nowMs: issuedAt, tokenId, expiresAtMs: expiresAt, meta: metaOf(claims), max: TOKENS_PER_USER_MAX,
    });
    if (r.status === "TOKENS_FULL") {
      throw new FailedPreconditionError(`user ${req.user} already holds ${r.live} live device tokens (TOKENS_PER_USER_MAX ${TOKENS_PER_USER_MAX}): revoke some (qimctl token revoke) or wait for them to expire; nothing was issued`, { live: r.live });
    }
    const ref = tokenRefKey(this.o.keys, req.tenant, tokenId as Uuid);
    await this.o.store.clientFor(ref.tag).set(ref.key, `${uuidToHex(req.user)}|${req.device}|${expiresAt}`, "PXAT", expiresAt);
    tokenMetrics.issued.inc();
    return { token, claims, dryRun: false };
  }

  /** Revokes one token by its id (found through its id's record: no user needed). NOT_FOUND when unknown or expired. */
  async revokeToken(req: { tenant: Uuid; tokenId: Uuid; dryRun?: boolean }): Promise<RevokeResult> {
    const now = this.now();
    const ref = tokenRefKey(this.o.keys, req.tenant, req.tokenId);
    const found = await this.o.store.clientFor(ref.tag).get(ref.key);
    const [userHex = "", device = "", exp = "0"] = (found ?? "").split("|");
    if (found === null || Number(exp) <= now) throw new NotFoundError("live device token", `${req.tokenId} (unknown, or already expired: an expired token needs no revocation)`);
    const user = hexToUuid(userHex);
    const k = userTokenKeys(this.o.keys, req.tenant, user);
    const client = this.o.store.clientFor(k.tag);
    const meta = await client.hget(k.meta, req.tokenId);
    const token = meta !== null ? tokenOf(req.tenant, user, req.tokenId, meta)
      : { tenant: req.tenant, user, device, tokenId: req.tokenId, issuedAt: 0, expiresAt: Number(exp), keyId: "" };
    if (req.dryRun) {
      const already = (await client.exists(k.revoked(req.tokenId))) === 1;
      return { scope: "token", tokens: [token], changed: !already, keptUntil: token.expiresAt, revokedAt: now, dryRun: true };
    }
    const r = await revokeTokenScript.run(client, { tokens: k.tokens, meta: k.meta, revoked: k.revoked(req.tokenId) }, { nowMs: now, tokenId: req.tokenId, expiresAtMs: token.expiresAt });
    if (r.newlyRevoked) tokenMetrics.revoked.inc({ scope: "token" });
    return { scope: "token", tokens: [token], changed: r.newlyRevoked, keptUntil: token.expiresAt, revokedAt: now, dryRun: false };
  }

  /** Revokes every token of a user's device issued up to now (known or not: the mark covers them all). */
  async revokeDevice(req: { tenant: Uuid; user: Uuid; device: string; dryRun?: boolean }): Promise<RevokeResult> {
    const now = this.now();
    const k = userTokenKeys(this.o.keys, req.tenant, req.user);
    const client = this.o.store.clientFor(k.tag);
    if (req.dryRun) {
      const all = await this.live(req.tenant, req.user, now);
      return { scope: "device", tokens: all.filter((t) => t.device === req.device), changed: true, keptUntil: now + TOKEN_TTL_MAX_MS, revokedAt: now, dryRun: true };
    }
    const r = await revokeDeviceScript.run(client, { tokens: k.tokens, meta: k.meta, deviceRevoked: k.deviceRevoked(req.device) }, { nowMs: now, device: req.device, ttlMaxMs: TOKEN_TTL_MAX_MS });
    tokenMetrics.revoked.inc({ scope: "device" });
    const tokens = r.removed.map((x) => tokenOf(req.tenant, req.user, x.tokenId, x.meta)).filter((t) => t.expiresAt > now).sort(byExpiry);
    return { scope: "device", tokens, changed: true, keptUntil: r.revokedAtMs + TOKEN_TTL_MAX_MS, revokedAt: r.revokedAtMs, dryRun: false };
  }

  /**
   * A user's live tokens (issued, not expired, not revoked), by expiry then id, a page at a time.
   * `pageToken` is the previous page's last "expiresAt:tokenId" ("" for the first page): a keyset
   * cursor, so a token issued or revoked between pages neither repeats nor hides another. The list
   * holds at most TOKENS_PER_USER_MAX ids, so one read of them is bounded.
   */
  async list(req: { tenant: Uuid; user: Uuid; limit: number; pageToken: string }): Promise<{ tokens: IssuedToken[]; nextPageToken: string }> {
    const limit = pageLimit(req.limit, TOKEN_LIST_PAGE);
    let after: { exp: number; id: string } | null = null;
    if (req.pageToken !== "") {
      const m = /^(\d{1,16}):([0-9a-f-]{36})$/.exec(req.pageToken);
      if (!m) throw new InvalidArgumentError("page_token", "page_token is not one this server gave (expiresAt:tokenId)");
      after = { exp: Number(m[1]), id: m[2]! };
    }
    const k = userTokenKeys(this.o.keys, req.tenant, req.user);
    const client = this.o.store.clientFor(k.tag);
    const raw = await client.zrange(k.tokens, `(${this.now()}`, "+inf", "BYSCORE", "LIMIT", 0, TOKENS_PER_USER_MAX, "WITHSCORES");
    const ids: { id: string; exp: number }[] = [];
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const e = { id: raw[i]!, exp: Number(raw[i + 1]) };
      if (after === null || e.exp > after.exp || (e.exp === after.exp && e.id > after.id)) ids.push(e);
    }
    const page = ids.slice(0, limit);
    if (page.length === 0) return { tokens: [], nextPageToken: "" };
    const metas = await client.hmget(k.meta, ...page.map((e) => e.id));
    const tokens = page.flatMap((e, i) => (metas[i] !== null ? [tokenOf(req.tenant, req.user, e.id, metas[i]!)] : []));
    const last = page[page.length - 1]!;
    return { tokens, nextPageToken: ids.length > limit ? `${last.exp}:${last.id}` : "" };
  }

  private async live(tenant: Uuid, user: Uuid, now: number): Promise<IssuedToken[]> {
    const k = userTokenKeys(this.o.keys, tenant, user);
    const client = this.o.store.clientFor(k.tag);
    const ids = await client.zrange(k.tokens, `(${now}`, "+inf", "BYSCORE", "LIMIT", 0, TOKENS_PER_USER_MAX);
    if (ids.length === 0) return [];
    const metas = await client.hmget(k.meta, ...ids);
    return ids.flatMap((id, i) => (metas[i] !== null ? [tokenOf(tenant, user, id, metas[i]!)] : []));
  }
}

function byExpiry(a: IssuedToken, b: IssuedToken): number {
  return a.expiresAt - b.expiresAt || (a.tokenId < b.tokenId ? -1 : 1);
}

