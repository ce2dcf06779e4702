/** Table-mode text of the `retention` commands. */
import { formatDuration, table } from "../format.js";
import type { RetentionRunResult, RetentionShowResult, RuleResult } from "./results.js";

export const ruleText = (r: RuleResult): string =>
  r.maxAgeMs === 0 && r.maxCount === 0 ? "keep everything" : [r.maxAgeMs > 0 ? `older than ${formatDuration(r.maxAgeMs)}` : "", r.maxCount > 0 ? `more than ${r.maxCount} behind the newest` : ""].filter((x) => x).join(" or ") + " goes";

export function showText(out: RetentionShowResult): string {
  const lines: string[] = [];
  if (!out.hasPolicy) lines.push(`Tenant ${out.tenant} has no retention policy: nothing of it is trimmed.`);
  else {
    lines.push(`Tenant ${out.tenant}: default class ${out.defaultClass ?? "-"}`);
    lines.push(out.classes.length === 0 ? "no classes" : table(["CLASS", "MAX AGE", "MAX COUNT", "RULE"], out.classes.map((c) => [
      c.name + (c.name === out.defaultClass ? " (default)" : ""), c.rule.maxAgeMs === 0 ? "-" : formatDuration(c.rule.maxAgeMs), c.rule.maxCount === 0 ? "-" : String(c.rule.maxCount), ruleText(c.rule),
    ])));
  }
  if (out.group) {
    const own = out.group.rule ? `own rule (${ruleText(out.group.rule)})` : out.group.retentionClass ? `class ${out.group.retentionClass}` : "no setting of its own";
    lines.push(`Group ${out.group.group}: ${own}; applies: ${out.group.effectiveSource} — ${ruleText(out.group.effectiveRule)}`);
  }
  return lines.join("\n");
}

export function runText(out: RetentionRunResult): string {
  const verb = out.dryRun ? "would remove (first step of each)" : "removed";
  const lines = [
    `${out.dryRun ? "Dry run" : "Round"} for tenant ${out.tenant} on ${out.answeredBy ?? "this server"} (${out.bucketsOwned} relay bucket(s) owned): ${out.conversations} conversation(s), ${verb} ${out.historyRemoved} history entries, ${out.unreadIndexRemoved} unread index entries, ${out.idempotencyRemoved} idempotency ids; CMD: ${out.cmdChannels} channel(s), ${out.cmdHistoryRemoved} entries, ${out.cmdIdempotencyRemoved} ids`,
  ];
  if (out.trims.length > 0) {
    lines.push(table(["GROUP", "RULE FROM", "EARLIEST", "HISTORY", "UNREAD IDX", "IDS", "MORE", "SKIPPED"], out.trims.map((t) => [
      t.group, t.source, `${t.earliestBefore} → ${t.earliestAfter}`, String(t.historyRemoved), String(t.unreadIndexRemoved), String(t.idempotencyRemoved), t.more ? "yes" : "", t.skipped ?? "",
    ])));
  }
  if (out.cmdTrims.length > 0) {
    lines.push(table(["CMD CHANNEL", "TYPE", "RULE FROM", "ACKED TO", "HISTORY", "IDS", "MORE"], out.cmdTrims.map((t) => [t.channelId, String(t.channelType), t.source, t.ackedThrough > 0 ? String(t.ackedThrough) : "-", String(t.historyRemoved), String(t.idempotencyRemoved), t.more ? "yes" : ""])));
  }
  if (out.behind > 0) lines.push(`${out.behind} want more than one round did: the next rounds go on`);
  if (out.truncated) lines.push("more had something to trim than --limit lists");
  return lines.join("\n");
}
