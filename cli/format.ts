/**
 * Table mode: lists print as aligned columns, a change prints one sentence with ids (etcdctl:
 * "Member 8e9e05c52164694d removed from cluster …"). Pure functions from results to text.
 */
import type { MembershipChangeResult, RecordResult } from "./results.js";

/** Columns separated by two spaces; the last column is not padded. */
export type Cell = string | number | null;

export function table(headers: readonly string[], rows: ReadonlyArray<readonly Cell[]>): string {
  const cells = [headers, ...rows.map((r) => r.map((c) => (c === null ? "-" : String(c))))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
  return cells
    .map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join("  ").trimEnd())
    .join("\n");
}

/** Label/value lines, labels aligned. */
export function keyValues(pairs: readonly (readonly [string, string | number | null])[]): string {
  const width = Math.max(...pairs.map(([k]) => k.length)) + 1;
  return pairs.map(([k, v]) => `${`${k}:`.padEnd(width)}  ${v === null ? "-" : String(v)}`).join("\n");
}

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

/** What a history record shows in a table: text, or the membership event, or the payload size. */
export function recordText(r: RecordResult): string {
  if (r.membership) return `${r.membership.op} ${r.membership.users.join(", ")}`;
  if (r.text !== null) return r.text.replace(/\s+/g, " ").slice(0, 120);
  return `<${Buffer.from(r.payloadBase64, "base64").length} bytes ${r.contentType}>`;
}

/** 86400000 → "1d", 5400000 → "1h30m", 90000 → "1m30s": the largest units, zeros left out. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${ms}ms`;
  const parts: string[] = [];
  let rest = Math.floor(ms / 1000);
  for (const [unit, secs] of [["d", 86_400], ["h", 3600], ["m", 60], ["s", 1]] as const) {
    const n = Math.floor(rest / secs);
    rest -= n * secs;
    if (n > 0) parts.push(`${n}${unit}`);
  }
  return parts.join("");
}
