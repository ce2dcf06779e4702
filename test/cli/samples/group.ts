/** Contract samples of the `group` commands (test/cli/result-samples.ts). */
import type GroupCreate from "../../../cli/commands/group/create.js";
import type GroupDissolve from "../../../cli/commands/group/dissolve.js";
import type GroupList from "../../../cli/commands/group/list.js";
import type GroupShow from "../../../cli/commands/group/show.js";
import type GroupTransferOwner from "../../../cli/commands/group/transfer-owner.js";
import { samplesOf, type ResultOf } from "../result-samples.js";

const group: ResultOf<typeof GroupShow> = {
  tenant: "8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c",
  group: "5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39",
  owner: "1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f",
  version: 1,
  memberCount: 2,
  createdAtMs: 1795989711836,
  conversationSeq: 0,
  state: "ACTIVE",
  dissolvedAt: null,
  maxMembers: 1000000,
};

const dissolvedGroup: ResultOf<typeof GroupShow> = { ...group, version: 2, conversationSeq: 7, state: "DISSOLVED", dissolvedAt: 7 };

const dissolution: ResultOf<typeof GroupDissolve> = {
  tenant: group.tenant,
  group: group.group,
  outcome: "committed",
  owner: group.owner,
  memberCount: 2,
  version: 2,
  dissolvedAt: 7,
  messageId: "0191d3a4-5b6c-7d8e-9f0a-1b2c3d4e5f60",
  attempts: 1,
};

const transfer: ResultOf<typeof GroupTransferOwner> = {
  tenant: group.tenant,
  group: group.group,
  outcome: "committed",
  previousOwner: group.owner,
  owner: "0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b",
  version: 3,
  attempts: 1,
};

export const samples = {
  "group create": samplesOf<ResultOf<typeof GroupCreate>>(group),
  "group show": samplesOf<ResultOf<typeof GroupShow>>(group, dissolvedGroup),
  "group list": samplesOf<ResultOf<typeof GroupList>>(
    { tenant: group.tenant, groups: [group, dissolvedGroup], nextCursor: "0.1536" },
    { tenant: group.tenant, groups: [], nextCursor: null },
  ),
  "group transfer-owner": samplesOf<ResultOf<typeof GroupTransferOwner>>(
    { ...transfer, outcome: "committed" },
    { ...transfer, outcome: "noop", previousOwner: transfer.owner, version: 3 },
    { ...transfer, outcome: "planned", version: 2 },
  ),
  "group dissolve": samplesOf<ResultOf<typeof GroupDissolve>>(
    dissolution,
    { ...dissolution, outcome: "noop" },
    { ...dissolution, outcome: "planned", version: 1, dissolvedAt: null, messageId: null },
  ),
};
