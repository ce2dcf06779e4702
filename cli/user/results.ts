/** The JSON results of the `user` commands (docs/operator-guide.md); cli/result.ts says how they are declared. */
import type { UserGroup } from "../../admin-api/client.js";
import { resultFrom } from "../result.js";

/** One group of the user: state and visible interval (joined_at, left_at) in conversation_seq terms. */
export const userGroupResult = resultFrom<UserGroup>()({
  group: "wire",
  /** "ACTIVE", "LEFT" or "REMOVED". */
  state: "wire",
  joinedAt: "u64",
  /** null while the user is a member. */
  leftAt: "u64 or null",
});
export type UserGroupResult = ReturnType<typeof userGroupResult>;

/** The JSON result of `user groups`, built by the command from every page. */
export interface UserGroupsResult {
  tenant: string;
  user: string;
  /** Every group the user is or was in, by group id (all pages of ListUserGroups). */
  groups: UserGroupResult[];
  /** Conversations in the user's set (session projection and authority). */
  conversations: number;
}
