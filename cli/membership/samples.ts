/** Contract samples of the `membership` commands (cli/contract.ts). */
import type MembershipAdd from "../commands/membership/add.js";
import type MembershipList from "../commands/membership/list.js";
import type MembershipRemove from "../commands/membership/remove.js";
import { samplesOf, type ResultOf } from "../contract.js";

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

export const samples = {
  "membership add": samplesOf<ResultOf<typeof MembershipAdd>>(committed, noop),
  "membership remove": samplesOf<ResultOf<typeof MembershipRemove>>(committed, noop),
  "membership list": samplesOf<ResultOf<typeof MembershipList>>(
    { group: "5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39", version: 2, members: [] },
    {
      group: "5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39",
      version: 2,
      members: [
        { userId: "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d", joinedAt: 1, leftAt: null, state: "ACTIVE" },
        { userId: "0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b", joinedAt: 0, leftAt: 2, state: "REMOVED" },
      ],
    },
  ),
};
