import { QimError } from "../base/index.js";

/**
 * STALE_OWNER (one line in ERROR_CODES: gRPC UNAVAILABLE, qimctl exit 5, HTTP 503): the unit a
 * request names — a relay bucket, a dispatch partition, a user's slot — is owned by another node,
 * or the ownership is moving; nothing was applied, and the caller re-resolves the owner and retries
 * (docs/architecture.md "The rule"). The node router raises it after its one re-resolve; the CMD
 * sync raises it for a user whose slot this node does not own (core/cmd-sync), and a fenced
 * durable write is one too (CmdFencedError).
 */
export class StaleOwnerError extends QimError {
  constructor(message = "the unit is owned by another node", details: Record<string, unknown> = {}) {
    super("STALE_OWNER", message, details);
    this.name = "StaleOwnerError";
  }
}
