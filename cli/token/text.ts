/** Table-mode text of the `token` commands. */
import { table } from "../format.js";
import type { DeviceTokenResult, TokenIssueResult, TokenKeygenResult, TokenListResult, TokenRevokeResult } from "./results.js";

const iso = (ms: number) => new Date(ms).toISOString();

export function issuedText(out: TokenIssueResult): string {
  const c = out.claims;
  const what = `user ${c.user} device ${c.device}, key ${c.keyId}, expires ${iso(c.expiresAtMs)}`;
  return out.dryRun ? `Dry run: would issue a device token for ${what}; nothing was signed or recorded` : `Issued device token ${c.tokenId} for ${what}`;
}

function tokensTable(tokens: readonly DeviceTokenResult[]): string {
  return table(["TOKEN ID", "DEVICE", "ISSUED", "EXPIRES", "KEY"], tokens.map((t) => [t.tokenId, t.device, iso(t.issuedAtMs), iso(t.expiresAtMs), t.keyId]));
}

export function revokedText(out: TokenRevokeResult, target: string): string {
  const head = out.dryRun ? `Dry run: would revoke ${target} (${out.tokens.length} live token(s)); nothing changed`
    : !out.changed ? `${target} already was revoked: nothing changed`
    : `Revoked ${target} (${out.tokens.length} live token(s)); the revocation is kept until ${iso(out.keptUntilMs)}`;
  return out.tokens.length === 0 ? head : `${head}\n\n${tokensTable(out.tokens)}`;
}

export function listText(out: TokenListResult): string {
  if (out.tokens.length === 0) return `No live device tokens for user ${out.user}`;
  const more = out.nextPageToken ? `\n\nmore: --page-token ${out.nextPageToken}` : "";
  return `${tokensTable(out.tokens)}${more}`;
}

export function keygenText(out: TokenKeygenResult): string {
  const verb = out.dryRun ? "Dry run: would write" : "Wrote";
  const lines = [`${verb} ${out.file}: new ${out.alg} key ${out.keyId} signs from now on; keys ${out.keys.join(", ")}`];
  if (out.dropped.length > 0) lines.push(`Key(s) ${out.dropped.join(", ")} ${out.dryRun ? "would leave" : "left"} the file: tokens they signed no longer verify`);
  if (out.publicFile) lines.push(`${verb} the public keys to ${out.publicFile} (for nodes that only verify)`);
  return lines.join("\n");
}
