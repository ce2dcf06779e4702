import { StaleOwnerError } from "../cluster/index.js";

/**
 * The CMD sync's domain errors. A user whose slot this node does not own is the cluster's
 * StaleOwnerError (STALE_OWNER: retryable, gRPC UNAVAILABLE, qimctl exit 5, HTTP 503): the surfaces
 * re-resolve the owner and retry there.
 */

/** The message of a StaleOwnerError for a user's slot owned by another node. */
export const USER_SLOT_NOT_OURS = "the user's slot is owned by another node";

/**
 * A durable CMD state write refused inside its Lua script: the slot's lease names another owner
 * or a newer token than the fence the write carried. Nothing of the batch was written.
 */
export class CmdFencedError extends StaleOwnerError {
  readonly slot: number;
  constructor(slot: number) {
    super(`the CMD state write of slot ${slot} was fenced: the slot's lease names another owner`, { slot });
    this.name = "CmdFencedError";
    this.slot = slot;
  }
}
