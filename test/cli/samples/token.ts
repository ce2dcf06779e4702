/** Contract samples of the `token` commands (test/cli/result-samples.ts). */
import type TokenIssue from "../../../cli/commands/token/issue.js";
import type TokenKeygen from "../../../cli/commands/token/keygen.js";
import type TokenList from "../../../cli/commands/token/list.js";
import type TokenRevoke from "../../../cli/commands/token/revoke.js";
import { samplesOf, type ResultOf } from "../result-samples.js";

const claims = {
  tenant: "8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c",
  user: "0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b",
  device: "phone-1",
  tokenId: "6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b",
  issuedAtMs: 1796000000123,
  expiresAtMs: 1796604800000,
  keyId: "tok-20261202-9f3a1c2e",
};

export const samples = {
  "token issue": samplesOf<ResultOf<typeof TokenIssue>>(
    { token: "eyJhbGciOiJFZERTQSIsImtpZCI6InRvay0yMDI2MTIwMi05ZjNhMWMyZSIsInR5cCI6InFpbS1kZXZpY2Urand0In0.e30.c2ln", claims, dryRun: false },
    { token: null, claims: { ...claims, tokenId: "6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4c" }, dryRun: true },
  ),
  "token revoke": samplesOf<ResultOf<typeof TokenRevoke>>(
    { scope: "token", tokens: [claims], changed: true, keptUntilMs: 1796604800000, revokedAtMs: 1796000100000, dryRun: false },
    { scope: "device", tokens: [], changed: true, keptUntilMs: 1798592100000, revokedAtMs: 1796000100000, dryRun: true },
  ),
  "token list": samplesOf<ResultOf<typeof TokenList>>(
    { tenant: claims.tenant, user: claims.user, tokens: [claims], nextPageToken: "1796604800000:6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b" },
    { tenant: claims.tenant, user: claims.user, tokens: [], nextPageToken: null },
  ),
  "token keygen": samplesOf<ResultOf<typeof TokenKeygen>>(
    { file: "/etc/qim/token-keys.json", keyId: "tok-20261202-9f3a1c2e", alg: "EdDSA", keys: ["tok-20261202-9f3a1c2e", "tok-20261101-0b1c2d3e"], dropped: ["tok-20261001-aa11bb22"], publicFile: null, dryRun: false },
    { file: "token-keys.json", keyId: "tok-20261202-9f3a1c2e", alg: "ES256", keys: ["tok-20261202-9f3a1c2e"], dropped: [], publicFile: "token-keys.public.json", dryRun: true },
  ),
};
