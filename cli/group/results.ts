/** The JSON results of the `group` commands (docs/operator-guide.md); cli/result.ts says how they are declared. */
import type { Group, GroupDissolution, OwnerTransfer } from "../../admin-api/client.js";
import { resultFrom } from "../result.js";

/** The group a result is about, as the command named it: the tenant and group id. */
export interface GroupScope {
  tenant: string;
  group: string;
}

export const groupResult = resultFrom<Group>()({
  tenant: "wire",
  group: "wire",
  owner: "wire",
  /** The member version: 1 at creation, +1 per membership event; what --expect-version compares. */
  version: "u64",
  memberCount: "wire",
  createdAtMs: "u64",
  /** The latest conversation_seq allocated in the group (messages and membership events share it). */
  conversationSeq: "u64",
  /** "ACTIVE", or "DISSOLVED" after `group dissolve`. */
  state: (g): "ACTIVE" | "DISSOLVED" => (g.state === "DISSOLVED" ? "DISSOLVED" : "ACTIVE"),
  /** The dissolve event's conversation_seq; null while ACTIVE. */
  dissolvedAt: "u64 or null",
  /** The server's groups.max_members (0 from a server older than issue 22, which does not say). */
  maxMembers: "wire",
});
export type GroupResult = ReturnType<typeof groupResult>;

/** The JSON result of `group transfer-owner`. */
export const ownerTransferResult = resultFrom<OwnerTransfer & GroupScope>()({
  tenant: "wire",
  group: "wire",
  /** "committed", "noop" (already the owner: a re-run after the transfer took effect) or "planned" (--dry-run). */
  outcome: (t) => t.outcome as "committed" | "noop" | "planned",
  /** The owner before the call (the same as owner for noop). */
  previousOwner: "wire",
  /** The owner after the call (the planned one for --dry-run). */
  owner: "wire",
  /** The member version after the transfer (the current one for noop and --dry-run). */
  version: "u64",
  attempts: "wire",
});
export type OwnerTransferResult = ReturnType<typeof ownerTransferResult>;

/**
 * The JSON result of `group list`: one page, or with --all every page, printed as the pages arrive
 * (a group may show twice if Redis rehashed meanwhile). Built by the command from pages of groups.
 */
export interface GroupListResult {
  tenant: string;
  groups: GroupResult[];
  /** The --cursor of the next page; null after the last page (always null with --all). */
  nextCursor: string | null;
}

/** The JSON result of `group dissolve`. */
export const dissolutionResult = resultFrom<GroupDissolution & GroupScope>()({
  tenant: "wire",
  group: "wire",
  /** "committed", "noop" (already dissolved: a re-run; no second event) or "planned" (--dry-run). */
  outcome: (d) => d.outcome as "committed" | "noop" | "planned",
  /** The recorded sender of the dissolve event. */
  owner: "wire",
  /** The members the dissolve event goes to (would go to, for --dry-run). */
  memberCount: "wire",
  /** The member version after the dissolve (the current one for --dry-run). */
  version: "u64",
  /** The dissolve event's conversation_seq J; null for --dry-run. */
  dissolvedAt: "u64 or null",
  /** The dissolve event's message id; null for --dry-run (or a noop whose event retention dropped). */
  messageId: "text or null",
  attempts: "wire",
});
export type DissolutionResult = ReturnType<typeof dissolutionResult>;
