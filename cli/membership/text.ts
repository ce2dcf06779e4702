/**
 * Table-mode text of the `membership` commands: a change prints one sentence with ids (etcdctl:
 * "Member 8e9e05c52164694d removed from cluster …"), a dry run its plan, a list a table.
 */
import { keyValues, table, visible } from "../format.js";
import type { MemberListResult, MemberResult, MembershipBulkLine, MembershipChangeResult } from "./results.js";

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

/** The line above a member table: the group, its version and current member count. */
export function memberListHead(group: string, version: number, memberCount: number): string {
  return `Group ${group} at version ${version}: ${memberCount} current member(s)`;
}

const MEMBER_COLUMNS = ["USER", "STATE", "JOINED AT", "LEFT AT"] as const;

/** One page as a table. */
export function memberListText(r: MemberListResult): string {
  const rows = table(MEMBER_COLUMNS, r.members.map((m) => [m.userId, m.state, m.joinedAt, m.leftAt]));
  return [memberListHead(r.group, r.version, r.memberCount), rows, ...(r.nextCursor === null ? [] : [`more: --cursor ${r.nextCursor}`])].join("\n");
}

/**
 * The rows of `membership list --all`, printed as pages arrive: fixed column widths (a user id is
 * 36 characters, a state at most 7), since the widest cell of a million rows is not known before
 * the last.
 */
const STREAM_WIDTHS = [36, 7, 10] as const;

export function memberStreamHeader(): string {
  return MEMBER_COLUMNS.map((c, i) => (i < STREAM_WIDTHS.length ? c.padEnd(STREAM_WIDTHS[i]!) : c)).join("  ");
}

export function memberStreamRow(m: MemberResult): string {
  const cells = [m.userId, m.state, String(m.joinedAt), m.leftAt === null ? "-" : String(m.leftAt)].map(visible);
  return cells.map((c, i) => (i < STREAM_WIDTHS.length ? c.padEnd(STREAM_WIDTHS[i]!) : c)).join("  ");
}

const already = (op: string) => (op === "join" ? "already members" : "not members");

/** One batch of `membership add|remove --from-file`, as it is answered. */
export function bulkBatchText(l: MembershipBulkLine): string {
  const v = verb(l.op);
  const head = `batch ${l.batch}/${l.of}:`;
  const state = `version ${l.version}, ${l.memberCount} members`;
  switch (l.outcome) {
    case "committed":
      return `${head} ${v.done.toLowerCase()} ${l.changed} user(s) as event seq ${l.eventConversationSeq} (${l.unchanged} ${already(l.op)}); ${state}`;
    case "duplicate":
      return `${head} already applied by an earlier run as event seq ${l.eventConversationSeq}; nothing changed`;
    case "noop":
      return `${head} nothing to ${v.doing}: all ${l.users} user(s) ${already(l.op)}`;
    case "planned":
      return `${head} would ${v.doing} ${l.changed} user(s) (${l.unchanged} ${already(l.op)}) at version ${l.version}; ${l.memberCount} members after`;
    default:
      return `${head} ${l.outcome}`;
  }
}

/**
 * The summary of `membership add|remove --from-file`: what the run did and, when it stopped
 * early, how to resume it. `answered`: how many batches were answered.
 */
export function bulkSummaryText(s: MembershipBulkLine, answered: number): string {
  const v = verb(s.op);
  const events = s.events ?? [];
  const seqs = events.length === 0 ? "no event" : `event seq ${events.map((e) => e.eventConversationSeq).join(", ")}`;
  const folded = s.duplicates ? `; ${s.duplicates} duplicate line(s) folded` : "";
  const state = s.version === null ? "" : `; version ${s.version}, ${s.memberCount} members`;
  const input = `${s.users} distinct user(s) in ${s.of} batch(es)`;
  const earlier = events.some((e) => e.outcome === "duplicate") ? " or applied by an earlier run" : "";
  switch (s.outcome) {
    case "planned":
      return `Dry run: would ${v.doing} ${s.changed} of ${input} ${v.prep} group ${s.group} (${s.unchanged} ${already(s.op)})${folded}${state}; nothing written`;
    case "completed":
      return `${v.done} ${s.changed} of ${input} ${v.prep} group ${s.group} (${s.unchanged} ${already(s.op)}${earlier}): ${seqs}${folded}${state}`;
    default: {
      const stop = s.outcome === "failed" ? `Stopped: batch ${s.failedBatch} of ${s.of} failed (see the error)` : `Interrupted after ${answered} of ${s.of} batch(es)`;
      return [
        `${stop}; ${v.done.toLowerCase()} ${s.changed} user(s) ${v.prep} group ${s.group} (${seqs}), ${s.users - s.changed - s.unchanged} user(s) not applied yet${state}.`,
        `No batch is half-applied. Resume with the same command${s.outcome === "failed" ? " once the cause is fixed" : ""} (batches already applied come back duplicate or noop):`,
        `  ${s.resume}`,
      ].join("\n");
    }
  }
}
