/**
 * Table-mode text of the `membership` commands: a change prints one sentence with ids (etcdctl:
 * "Member 8e9e05c52164694d removed from cluster …"), a dry run its plan, a list a table.
 */
import { keyValues, table } from "../format.js";
import type { MemberListResult, MembershipChangeResult } from "./results.js";

const verb = (op: string) => (op === "join" ? { done: "Added", doing: "add", prep: "to" } : { done: "Removed", doing: "remove", prep: "from" });

/** The one sentence (or, for a dry run, the plan) a membership change prints. */
export function describeMembershipChange(r: MembershipChangeResult): string {
  const v = verb(r.op);
  const state = `version ${r.version}, ${r.memberCount} members`;
  switch (r.outcome) {
    case "committed":
      return `${v.done} ${r.changed.length} member(s) ${v.prep} group ${r.group}: event seq ${r.eventConversationSeq}, ${state} (users ${r.changed.join(", ")}; idempotency id ${r.idempotencyId})`;
    case "duplicate":
      return `Nothing changed: this change was already committed to group ${r.group} as event seq ${r.eventConversationSeq}; ${state}`;
    case "noop":
      return `Nothing changed: ${r.op === "join" ? "every user is already a member of" : "no user is a member of"} group ${r.group}; ${state}`;
    case "planned":
      if (r.changed.length === 0) return `Dry run: nothing to ${v.doing} in group ${r.group} (${state}); nothing written`;
      return [
        `Dry run: would ${v.doing} ${r.changed.length} member(s) ${v.prep} group ${r.group} at version ${r.version}; nothing written`,
        keyValues([
          ["targets", r.changed.join(", ")],
          ["audience size", r.audienceSize],
          ["idempotency id", r.idempotencyId],
          ["members after", r.memberCount],
        ]).replace(/^/gm, "  "),
      ].join("\n");
    default:
      return `${r.outcome} ${r.op} in group ${r.group}: ${state}`;
  }
}

export function memberListText(r: MemberListResult): string {
  const active = r.members.filter((m) => m.state === "ACTIVE").length;
  return [
    `Group ${r.group} at version ${r.version}: ${active} active of ${r.members.length} listed`,
    table(["USER", "STATE", "JOINED_AT", "LEFT_AT"], r.members.map((m) => [m.userId, m.state, m.joinedAt, m.leftAt])),
  ].join("\n");
}
