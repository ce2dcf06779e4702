/** The JSON results of the `user` commands (docs/operator-guide.md). */
import type { UserGroup } from "../../admin-api/client.js";
import { optionalU64, u64 } from "../format.js";

/** One group of the user: state and visible interval (joined_at, left_at) in conversation_seq terms. */
export interface UserGroupResult {
  group: string;
  /** "ACTIVE", "LEFT" or "REMOVED". */
  state: string;
  joinedAt: number;
  /** null while the user is a member. */
  leftAt: number | null;
}

export function userGroupResult(g: UserGroup): UserGroupResult {
  return { group: g.group, state: g.state, joinedAt: u64(g.joinedAt), leftAt: optionalU64(g.leftAt) };
}

export interface UserGroupsResult {
  tenant: string;
  user: string;
  /** Every group the user is or was in, by group id (all pages of ListUserGroups). */
  groups: UserGroupResult[];
  /** Conversations in the user's set (session projection and authority). */
  conversations: number;
}
