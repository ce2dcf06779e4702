/**
 * Who a device is: the identity its signed device token names, verified once at the WebSocket
 * upgrade (before any frame is read). The tokens themselves (signing keys, issue, revoke, the
 * verification cache) are core/tokens'; the gateway only asks it.
 */
import { InvalidArgumentError, type Uuid } from "../../../core/index.js";
import type { OpenContext } from "../../listener.js";

export interface DeviceIdentity {
  tenant: Uuid;
  user: Uuid;
  device: string;
  /** The token's id (jti): the principal's fingerprint in the pipeline, what a revocation names. */
  tokenId: string;
  /** ms since the epoch. */
  expiresAt: number;
}

export interface DeviceVerifier {
  /** The token's identity; throws a QimError (code UNAUTHENTICATED and a reason) when it is not valid now. */
  verify(token: string): Promise<DeviceIdentity>;
}

/** The subprotocol prefix a browser carries its token in (it cannot set an Authorization header): `qim-token.<token>`. */
export const TOKEN_SUBPROTOCOL_PREFIX = "qim-token.";
/** The subprotocol the node answers with: the frames of proto/qim/client/v1. */
export const FRAMES_SUBPROTOCOL = "qim.client.v1";

/** The token of an upgrade request: `Authorization: Bearer <token>`, else a `qim-token.<token>` subprotocol; null when neither. */
export function tokenOf(headers: Record<string, string | string[] | undefined>): string | null {
  const auth = headers.authorization;
  if (typeof auth === "string") {
    const m = /^Bearer\s+(\S+)$/i.exec(auth.trim());
    if (m) return m[1]!;
  }
  const protocols = headers["sec-websocket-protocol"];
  if (typeof protocols === "string") {
    for (const p of protocols.split(",").map((s) => s.trim())) if (p.startsWith(TOKEN_SUBPROTOCOL_PREFIX)) return p.slice(TOKEN_SUBPROTOCOL_PREFIX.length);
  }
  return null;
}

/** The node's device token verifier (core/tokens: the runtime's, over the `tokens.keys` file). */
export function deviceVerifierOf(ctx: OpenContext): DeviceVerifier {
  const tokens = ctx.runtime.tokens;
  if (!tokens) throw new InvalidArgumentError("gateway.listen", "the client gateway needs device tokens: set tokens.keys (qimctl token keygen makes the file)");
  return {
    async verify(token) {
      const c = await tokens.verifier.verify(token);
      return { tenant: c.tenant, user: c.user, device: c.device, tokenId: c.tokenId, expiresAt: c.expiresAt };
    },
  };
}
