/** The JSON results of the `group` commands (docs/operator-guide.md). */
import type { Group, OwnerTransfer } from "../../admin-api/client.js";
import { u64 } from "../format.js";

export interface GroupResult {
  tenant: string;
  group: string;
  owner: string;
  /** The member version: 1 at creation, +1 per membership event; what --expect-version compares. */
  version: number;
  memberCount: number;
  createdAtMs: number;
  /** The latest conversation_seq allocated in the group (messages and membership events share it). */
  conversationSeq: number;
  /** The server's groups.max_members (0 from a server older than issue 22, which does not say). */
  maxMembers: number;
}

export function groupResult(g: Group): GroupResult {
  return {
    tenant: g.tenant,
    group: g.group,
    owner: g.owner,
    version: u64(g.version),
    memberCount: g.memberCount,
    createdAtMs: u64(g.createdAtMs),
    conversationSeq: u64(g.conversationSeq),
    maxMembers: g.maxMembers,
  };
}

/** The JSON result of `group transfer-owner`. */
export interface OwnerTransferResult {
  tenant: string;
  group: string;
  /** "committed", "noop" (already the owner: a re-run after the transfer took effect) or "planned" (--dry-run). */
  outcome: "committed" | "noop" | "planned";
  /** The owner before the call (the same as owner for noop). */
  previousOwner: string;
  /** The owner after the call (the planned one for --dry-run). */
  owner: string;
  /** The member version after the transfer (the current one for noop and --dry-run). */
  version: number;
  attempts: number;
}

export function ownerTransferResult(tenant: string, group: string, t: OwnerTransfer): OwnerTransferResult {
  return {
    tenant,
    group,
    outcome: t.outcome as OwnerTransferResult["outcome"],
    previousOwner: t.previousOwner,
    owner: t.owner,
    version: u64(t.version),
    attempts: t.attempts,
  };
}

/**
 * The JSON result of `group list`: one page, or with --all every page, printed as the pages arrive
 * (a group may show twice if Redis rehashed meanwhile).
 */
export interface GroupListResult {
  tenant: string;
  groups: GroupResult[];
  /** The --cursor of the next page; null after the last page (always null with --all). */
  nextCursor: string | null;
}
