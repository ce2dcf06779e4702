/** The JSON result of `group create` and `group show` (docs/operator-guide.md). */
import type { Group } from "../../admin-api/client.js";
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
  };
}
