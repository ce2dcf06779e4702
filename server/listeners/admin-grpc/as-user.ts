import { PermissionDeniedError, type ConversationService } from "../../../core/index.js";

/**
 * Runs a call an operator makes as a user (send, a conversation action). The engine refuses a
 * non-member with the user path's PERMISSION_DENIED, which hides whether the group exists
 * (ADR-0021 §3) and read as a certificate problem (exit 6) to an operator who can see the group
 * anyway; the admin API answers NOT_FOUND (no such group) or FAILED_PRECONDITION "not a member"
 * instead. The engine's rule for users is unchanged.
 */
export async function asUser<T>(
  conversations: ConversationService, who: { tenant: string; group: string; user: string; field: string }, call: () => Promise<T>,
): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (!(err instanceof PermissionDeniedError)) throw err;
    throw await conversations.operatorRefusal(who.tenant, who.group, who.user, who.field, err);
  }
}
