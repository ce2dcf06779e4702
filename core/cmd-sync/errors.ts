import { StaleOwnerError } from "../cluster/index.js";

/**
 * The CMD sync's domain errors. A user whose slot this node does not own is the cluster's
 * StaleOwnerError (STALE_OWNER: retryable, gRPC UNAVAILABLE, qimctl exit 5, HTTP 503): the surfaces
 * re-resolve the owner and retry there.
 */

/** The message of a StaleOwnerError for a user's slot owned by another node. */
export const USER_SLOT_NOT_OURS = "the user's slot is owned by another node";

/**
 * A durable CMD state write refused by its fence: the slot's lease names another owner or a newer
 * token than the fence the write carried (inside the Lua script on Redis; on Cassandra by the lease
 * check before writing, or by a row a newer token wrote). Nothing of the batch was written on
 * Redis; on Cassandra nothing of the refused user's rows (docs/cmd-sync-core.md).
 */
export class CmdFencedError extends StaleOwnerError {
  readonly slot: number;
  constructor(slot: number) {
    super(`the CMD state write of slot ${slot} was fenced: the slot's lease names another owner`, { slot });
    this.name = "CmdFencedError";
    this.slot = slot;
  }
}
