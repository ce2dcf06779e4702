import { Counter, Gauge } from "prom-client";
import { registry } from "../metrics/index.js";

/** The device tokens' metrics, in the process's one registry. */
export const tokenMetrics = {
  verifications: new Counter({
    name: "qim_token_verifications_total",
    help: "Device token verifications by outcome (ok, invalid, expired, revoked) and path (cold: the signature was checked; cached: a token verified before, its revocation read again)",
    labelNames: ["result", "path"] as const,
    registers: [registry],
  }),
  issued: new Counter({
    name: "qim_tokens_issued_total",
    help: "Device tokens issued",
    registers: [registry],
  }),
  revoked: new Counter({
    name: "qim_tokens_revoked_total",
    help: "Device token revocations by scope (token: one token id; device: every token of a user's device)",
    labelNames: ["scope"] as const,
    registers: [registry],
  }),
  cacheEntries: new Gauge({
    name: "qim_token_verify_cache_entries",
    help: "Verified tokens held by this process's verifier cache (bounded by TOKEN_VERIFY_CACHE_MAX)",
    registers: [registry],
  }),
  keyReloads: new Counter({
    name: "qim_token_key_reloads_total",
    help: "Reads of the token key file after it changed, by outcome (ok, refused: the previous keys stay)",
    labelNames: ["result"] as const,
    registers: [registry],
  }),
};
