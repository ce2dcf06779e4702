import { QimError } from "../base/index.js";

/**
 * The CMD sync's domain errors. Their code is one line in ERROR_CODES (core/errors):
 * CMD_STALE_OWNER — retryable, gRPC UNAVAILABLE, qimctl exit 5 ("the user's slot is owned by
 * another node"): the surfaces re-resolve the owner and retry there.
 */
export class CmdStaleOwnerError extends QimError {
  constructor(message = "the user's slot is owned by another node", details: Record<string, unknown> = {}) {
    super("CMD_STALE_OWNER", message, details);
    this.name = "CmdStaleOwnerError";
  }
}

/**
 * A durable CMD state write refused by its fence: the slot's lease names another owner or a newer
 * token than the fence the write carried (inside the Lua script on Redis; on Cassandra by the lease
 * check before writing, or by a row a newer token wrote). Nothing of the batch was written on
 * Redis; on Cassandra nothing of the refused user's rows (docs/cmd-sync-core.md).
 */
export class CmdFencedError extends CmdStaleOwnerError {
  readonly slot: number;
  constructor(slot: number) {
    super(`the CMD state write of slot ${slot} was fenced: the slot's lease names another owner`, { slot });
    this.name = "CmdFencedError";
    this.slot = slot;
  }
}
