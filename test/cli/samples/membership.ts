/** Contract samples of the `membership` commands (test/cli/result-samples.ts). */
import type MembershipAdd from "../../../cli/commands/membership/add.js";
import type MembershipList from "../../../cli/commands/membership/list.js";
import type MembershipRemove from "../../../cli/commands/membership/remove.js";
import { lineSamplesOf, samplesOf, withFlag, type ResultOf } from "../result-samples.js";
import type { MembershipBulkLine } from "../../../cli/membership/results.js";

const committed: ResultOf<typeof MembershipAdd> = {
  group: "5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39",
  op: "join",
  outcome: "committed",
  changed: ["9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d"],
  eventConversationSeq: 2,
  messageId: "01a22954-7c1e-7b3a-9f00-2d5e8c1b4a6f",
  version: 2,
  memberCount: 3,
  idempotencyId: "f5a7e6d86fc09bf3efd7a51343d98715",
  audienceSize: 3,
  attempts: 1,
};

const noop: ResultOf<typeof MembershipRemove> = {
  group: "5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39",
  op: "remove",
  outcome: "noop",
  changed: [],
  eventConversationSeq: null,
  messageId: null,
  version: 2,
  memberCount: 3,
  idempotencyId: null,
  audienceSize: 0,
  attempts: 1,
};

const batch: MembershipBulkLine = {
  type: "batch",
  group: "5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39",
  op: "join",
  batch: 2,
  of: 5,
  outcome: "committed",
  users: 1000,
  changed: 998,
  unchanged: 2,
  eventConversationSeq: 7,
  version: 3,
  memberCount: 2001,
  events: null,
  duplicates: null,
  failedBatch: null,
  resume: null,
};

const interrupted: MembershipBulkLine = {
  ...batch,
  type: "summary",
  batch: null,
  outcome: "interrupted",
  users: 5000,
  changed: 1998,
  unchanged: 2,
  eventConversationSeq: null,
  events: [{ batch: 1, eventConversationSeq: 6, outcome: "duplicate" }, { batch: 2, eventConversationSeq: 7, outcome: "committed" }],
  duplicates: 3,
  resume: "qimctl membership add --group 5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39 --from-file users.txt",
};

const failedFirst: MembershipBulkLine = {
  ...interrupted,
  outcome: "failed",
  changed: 0,
  unchanged: 0,
  version: null,
  memberCount: null,
  events: [],
  duplicates: 0,
  failedBatch: 1,
};

/** `--from-file`: JSON lines, a batch line per call and the summary last. */
const fromFile = lineSamplesOf<MembershipBulkLine>(batch, { ...batch, outcome: "noop", changed: 0, unchanged: 1000, eventConversationSeq: null }, interrupted, failedFirst);

export const samples = {
  "membership add": withFlag(samplesOf<ResultOf<typeof MembershipAdd>>(committed, noop), "from-file", fromFile),
  "membership remove": withFlag(samplesOf<ResultOf<typeof MembershipRemove>>(committed, noop), "from-file", fromFile),
  "membership list": samplesOf<ResultOf<typeof MembershipList>>(
    { group: "5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39", members: [], version: 2, memberCount: 0, nextCursor: null },
    {
      group: "5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39",
      members: [
        { userId: "0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b", joinedAt: 0, leftAt: 2, state: "REMOVED" },
        { userId: "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d", joinedAt: 1, leftAt: null, state: "ACTIVE" },
      ],
      version: 2,
      memberCount: 1,
      nextCursor: "1536",
    },
  ),
};
