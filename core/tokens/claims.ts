import { DEVICE_ID_MAX_CHARS, InvalidArgumentError, QimError, type Uuid } from "../base/index.js";

/** What a verified device token says (issue 27): the gateway's principal for one connection. */
export interface DeviceClaims {
  tenant: Uuid;
  user: Uuid;
  device: string;
  tokenId: string;
  /** ms since the epoch; the token is refused from this instant on. */
  expiresAt: number;
  keyId: string;
  /** ms since the epoch (the issuer's clock): a device revoked at or after it refuses the token. */
  issuedAt: number;
}

/** The token's `iss` and its header's `typ`: nothing else signed with the same keys passes as a device token. */
export const TOKEN_ISSUER = "qim";
export const TOKEN_TYPE = "qim-device+jwt";

const DEVICE_RE = /^[A-Za-z0-9._:-]+$/;

/** A device id as a request names it: 1 to DEVICE_ID_MAX_CHARS of A-Z a-z 0-9 . _ : - */
export function parseDeviceId(text: unknown, field = "device"): string {
  if (typeof text !== "string" || text.length === 0) throw new InvalidArgumentError(field, `${field} is required (1 to ${DEVICE_ID_MAX_CHARS} of A-Z a-z 0-9 . _ : -)`);
  if (text.length > DEVICE_ID_MAX_CHARS || !DEVICE_RE.test(text)) {
    throw new InvalidArgumentError(field, `${field} must be 1 to ${DEVICE_ID_MAX_CHARS} of A-Z a-z 0-9 . _ : - (got ${JSON.stringify(text.slice(0, 40))}${text.length > 40 ? "…" : ""})`);
  }
  return text;
}

export type TokenRefusal = "TOKEN_INVALID" | "TOKEN_EXPIRED" | "TOKEN_REVOKED";

/** A refused device token. The message never quotes the token (it is a credential). */
export class TokenRefusedError extends QimError {
  constructor(code: TokenRefusal, message: string, details: Record<string, unknown> = {}) {
    super(code, message, details);
    this.name = "TokenRefusedError";
  }
}
