/** The JSON results of the `retention` commands (docs/retention.md); cli/result.ts says how they are declared. */
import type { AdminRetentionRule, GetRetentionResponse, RunRetentionResponse } from "../../admin-api/client.js";
import { nonEmpty, resultFrom } from "../result.js";

/** A rule: 0 turns a limit off. */
export interface RuleResult {
  maxAgeMs: number;
  maxCount: number;
}
const ruleResult = (r: AdminRetentionRule | undefined): RuleResult => ({ maxAgeMs: Number(r?.maxAgeMs ?? 0n), maxCount: Number(r?.maxCount ?? 0n) });

export const retentionShowResult = resultFrom<GetRetentionResponse>()({
  tenant: "wire",
  /** False: the tenant has no policy, nothing of it is trimmed. */
  hasPolicy: "wire",
  /** The class of every conversation without a setting of its own (null without a policy). */
  defaultClass: "text or null",
  classes: (r) => r.classes.map((c) => ({ name: c.name, rule: ruleResult(c.rule) })),
  /** With --group: the group's own class and rule, and what applies to it. */
  group: (r) => (r.group === undefined ? null : {
    group: r.group.group, retentionClass: nonEmpty(r.group.retentionClass), rule: r.group.rule === undefined ? null : ruleResult(r.group.rule),
    effectiveSource: r.group.effectiveSource, effectiveRule: ruleResult(r.group.effectiveRule),
  }),
});
export type RetentionShowResult = ReturnType<typeof retentionShowResult>;

export const retentionRunResult = resultFrom<RunRetentionResponse & { tenant: string }>()({
  tenant: "wire",
  /** True: nothing was written; the counts are what the first step of each would remove. */
  dryRun: "wire",
  /** Relay buckets the answering node owns: a round trims only those. */
  bucketsOwned: "wire",
  conversations: "u64",
  historyRemoved: "u64",
  unreadIndexRemoved: "u64",
  idempotencyRemoved: "u64",
  /** Conversations and channels the rule wants more of than this round did (the next rounds do it). */
  behind: "u64",
  skipped: "u64",
  trims: (r) => r.trims.map((t) => ({
    group: t.group, source: t.source, earliestBefore: Number(t.earliestBefore), earliestAfter: Number(t.earliestAfter),
    historyRemoved: Number(t.historyRemoved), unreadIndexRemoved: Number(t.unreadIndexRemoved), idempotencyRemoved: Number(t.idempotencyRemoved), more: t.more, skipped: nonEmpty(t.skipped),
  })),
  cmdChannels: "u64",
  cmdHistoryRemoved: "u64",
  cmdIdempotencyRemoved: "u64",
  cmdTrims: (r) => r.cmdTrims.map((t) => ({ channelType: t.channelType, channelId: t.channelId, source: t.source, historyRemoved: Number(t.historyRemoved), idempotencyRemoved: Number(t.idempotencyRemoved), more: t.more, ackedThrough: Number(t.ackedThrough) })),
  /** More had something to trim than --limit lists. */
  truncated: "wire",
  answeredBy: (r) => nonEmpty(r.answeredBy),
});
export type RetentionRunResult = ReturnType<typeof retentionRunResult>;
