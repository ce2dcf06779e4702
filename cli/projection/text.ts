/** Table-mode text of the `projection` commands. */
import { formatDuration, keyValues, table } from "../format.js";
import type { EpochBumpResult, EpochResult, ProjectionStatusResult, RebuildResult } from "./results.js";

export function epochText(out: EpochResult): string {
  const lines = [`epoch: ${out.epoch}`];
  if (out.bumps.length > 0) lines.push("", table(["EPOCH", "AT", "BY", "REASON"], out.bumps.map((b) => [b.epoch, new Date(b.atMs).toISOString(), b.by, b.reason])));
  return lines.join("\n");
}

export function bumpedText(out: EpochBumpResult): string {
  return `Epoch bumped to ${out.epoch} by ${out.by}: ${out.reason}`;
}

export function rebuiltText(out: RebuildResult): string {
  return out.rebuilt
    ? `Rebuilt user ${out.user}: merged ${out.merged} conversation(s) from the authority; mark ${out.mark} (epoch ${out.epoch})`
    : `Nothing to do: user ${out.user}'s mark ${out.mark} is current (epoch ${out.epoch}); --force rebuilds anyway`;
}

export function statusText(out: ProjectionStatusResult): string {
  return [
    keyValues([
      ["epoch", out.epoch],
      ["authority", out.authority],
      ["retention", out.retentionMs === 0 ? "off (never trimmed)" : formatDuration(out.retentionMs)],
      ...(out.failure ? [["FAILURE", out.failure] as const] : []),
    ]),
    "",
    table(
      ["PARTITION", "VERDICT", "CHECKPOINT", "LOW", "HIGH", "LAG"],
      out.partitions.map((p) => [p.partition, p.verdict, p.checkpoint, p.low, p.high, p.lag]),
    ),
    "",
    table(["INSTANCE", "PENDING", "DEAD LETTERS"], out.pending.map((p) => [p.instance, p.depth, p.deadLetters])),
  ].join("\n");
}
