/** Table-mode text of the `user` commands. */
import { table } from "../format.js";
import type { UserGroupsResult } from "./results.js";

export function userGroupsText(r: UserGroupsResult): string {
  const active = r.groups.filter((g) => g.state === "ACTIVE").length;
  const head = `User ${r.user}: member of ${active} group(s), ${r.groups.length - active} left or removed`;
  if (r.groups.length === 0) return `${head} (no group in the user's conversations; a group joined at its creation shows once it has a message)`;
  return [head, table(["GROUP", "STATE", "JOINED AT", "LEFT AT"], r.groups.map((g) => [g.group, g.state, g.joinedAt, g.leftAt]))].join("\n");
}
