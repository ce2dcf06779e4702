import {
  FailedPreconditionError, InvalidArgumentError, parseDeviceId, parseTokenTtl, parseUuid, TOKEN_TTL_DEFAULT_MS, type DeviceTokens, type EngineRuntime, type IssuedToken,
} from "../../../../core/index.js";
import { catalogEntry } from "../../../../admin-api/catalog.js";
import { ALL_ROLES, defineService, MUTATE, unary } from "../../../pipeline/rpc.js";

/**
 * TokenService (issue 27): device tokens issued, revoked and listed by operators. Issue and revoke
 * mutate, so the pipeline audits them: the request (tenant, user, device, ttl, or the token id) and
 * the detail below, which names the token id and key id, never the token string.
 */

function tokensOf(runtime: EngineRuntime): DeviceTokens {
  if (!runtime.tokens) throw new FailedPreconditionError("this server has no device token keys: start it with tokens.keys (--tokens-keys FILE, made by qimctl token keygen; docs/operator-guide.md \"Device tokens\")");
  return runtime.tokens;
}

function tokenOut(t: IssuedToken) {
  return { tenant: t.tenant, user: t.user, device: t.device, tokenId: t.tokenId, issuedAtMs: BigInt(t.issuedAt), expiresAtMs: BigInt(t.expiresAt), keyId: t.keyId };
}

const iso = (ms: number) => new Date(ms).toISOString();

export const tokenService = defineService(catalogEntry("qim.admin.v1.TokenService"), {
  issueToken: unary({
    roles: MUTATE, mutates: true,
    async handle(req, { deps }) {
      const tenant = parseUuid(req.tenant, "tenant");
      const user = parseUuid(req.user, "user");
      const device = parseDeviceId(req.device, "device");
      const ttlMs = parseTokenTtl(Number(req.ttlMs), TOKEN_TTL_DEFAULT_MS, "ttl_ms");
      const r = await tokensOf(deps.runtime).issuer.issue({ tenant, user, device, ttlMs, dryRun: req.dryRun });
      const c = r.claims;
      return {
        response: { token: r.token, claims: tokenOut(c), dryRun: r.dryRun },
        detail: `${r.dryRun ? "dry run: would issue" : "issued"} device token ${r.dryRun ? "" : `${c.tokenId} `}for user ${user} device ${device}, key ${c.keyId}, expires ${iso(c.expiresAt)}`,
      };
    },
  }),
  revokeTokens: unary({
    roles: MUTATE, mutates: true,
    async handle(req, { deps }) {
      const tenant = parseUuid(req.tenant, "tenant");
      const byId = req.tokenId !== "";
      if (byId && (req.user !== "" || req.device !== "")) throw new InvalidArgumentError("token_id", "give token_id, or user and device, not both");
      if (!byId && (req.user === "" || req.device === "")) throw new InvalidArgumentError(req.user === "" ? "user" : "device", "give token_id, or user and device");
      const tokenId = byId ? parseUuid(req.tokenId, "token_id") : null;
      const device = byId ? null : { user: parseUuid(req.user, "user"), device: parseDeviceId(req.device, "device") };
      const issuer = tokensOf(deps.runtime).issuer;
      const r = tokenId !== null
        ? await issuer.revokeToken({ tenant, tokenId, dryRun: req.dryRun })
        : await issuer.revokeDevice({ tenant, ...device!, dryRun: req.dryRun });
      const what = byId ? `device token ${req.tokenId}` : `the tokens of user ${req.user} device ${req.device} issued up to ${iso(r.revokedAt)}`;
      return {
        response: { scope: r.scope, tokens: r.tokens.map(tokenOut), changed: r.changed, keptUntilMs: BigInt(r.keptUntil), revokedAtMs: BigInt(r.revokedAt), dryRun: r.dryRun },
        detail: r.dryRun ? `dry run: would revoke ${what} (${r.tokens.length} live)`
          : r.changed ? `revoked ${what} (${r.tokens.length} live), kept until ${iso(r.keptUntil)}` : `${what} already was revoked: nothing changed`,
      };
    },
  }),
  listTokens: unary({
    roles: ALL_ROLES, mutates: false,
    async handle(req, { deps }) {
      const tenant = parseUuid(req.tenant, "tenant");
      const user = parseUuid(req.user, "user");
      const page = await tokensOf(deps.runtime).issuer.list({ tenant, user, limit: req.limit, pageToken: req.pageToken });
      return { response: { tokens: page.tokens.map(tokenOut), nextPageToken: page.nextPageToken } };
    },
  }),
});
