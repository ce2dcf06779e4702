/** Contract samples of the `retention` commands (test/cli/result-samples.ts). */
import type RetentionRun from "../../../cli/commands/retention/run.js";
import type RetentionSet from "../../../cli/commands/retention/set.js";
import type RetentionShow from "../../../cli/commands/retention/show.js";
import { samplesOf, type ResultOf } from "../result-samples.js";

const tenant = "8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c";
const group = "0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b";
const policy = {
  tenant, hasPolicy: true, defaultClass: "standard",
  classes: [{ name: "chatty", rule: { maxAgeMs: 604_800_000, maxCount: 10_000 } }, { name: "standard", rule: { maxAgeMs: 2_592_000_000, maxCount: 0 } }],
};
const show: [ResultOf<typeof RetentionShow>, ...ResultOf<typeof RetentionShow>[]] = [
  { ...policy, group: null },
  { ...policy, group: { group, retentionClass: "chatty", rule: null, effectiveSource: "class:chatty", effectiveRule: { maxAgeMs: 604_800_000, maxCount: 10_000 } } },
  { ...policy, group: { group, retentionClass: null, rule: { maxAgeMs: 0, maxCount: 500 }, effectiveSource: "group", effectiveRule: { maxAgeMs: 0, maxCount: 500 } } },
  { tenant, hasPolicy: false, defaultClass: null, classes: [], group: null },
];

export const samples = {
  "retention show": samplesOf<ResultOf<typeof RetentionShow>>(...show),
  "retention set": samplesOf<ResultOf<typeof RetentionSet>>(...show),
  "retention run": samplesOf<ResultOf<typeof RetentionRun>>(
    {
      tenant, dryRun: true, bucketsOwned: 256, conversations: 3, historyRemoved: 200, unreadIndexRemoved: 180, idempotencyRemoved: 0, behind: 1, skipped: 0,
      trims: [{ group, source: "class:standard", earliestBefore: 1, earliestAfter: 201, historyRemoved: 200, unreadIndexRemoved: 180, idempotencyRemoved: 0, more: true, skipped: null }],
      cmdChannels: 1, cmdHistoryRemoved: 7, cmdIdempotencyRemoved: 0,
      cmdTrims: [
        { channelType: 1, channelId: "orders____cmd", source: "class:standard", historyRemoved: 7, idempotencyRemoved: 0, more: false, ackedThrough: 0 },
        { channelType: 1, channelId: "acks____cmd", source: "none", historyRemoved: 3, idempotencyRemoved: 0, more: false, ackedThrough: 3 },
      ],
      truncated: false, answeredBy: "dev-1",
    },
    {
      tenant, dryRun: false, bucketsOwned: 128, conversations: 0, historyRemoved: 0, unreadIndexRemoved: 0, idempotencyRemoved: 0, behind: 0, skipped: 1,
      trims: [{ group, source: "group", earliestBefore: 5, earliestAfter: 5, historyRemoved: 0, unreadIndexRemoved: 0, idempotencyRemoved: 0, more: false, skipped: "pending" }],
      cmdChannels: 0, cmdHistoryRemoved: 0, cmdIdempotencyRemoved: 0, cmdTrims: [], truncated: true, answeredBy: null,
    },
  ),
};
