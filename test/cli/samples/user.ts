/** Contract samples of the `user` commands (test/cli/result-samples.ts). */
import type UserGroups from "../../../cli/commands/user/groups.js";
import { samplesOf, type ResultOf } from "../result-samples.js";

export const samples = {
  "user groups": samplesOf<ResultOf<typeof UserGroups>>(
    {
      tenant: "8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c",
      user: "9a8b7c6d-5e4f-4a3b-8c2d-1e0f9a8b7c6d",
      groups: [
        { group: "1b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39", state: "ACTIVE", joinedAt: 0, leftAt: null },
        { group: "5b0c1f9e-3d4a-4c2b-9f1e-8a7d6c5b4a39", state: "REMOVED", joinedAt: 2, leftAt: 6 },
      ],
      conversations: 2,
    },
    { tenant: "8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c", user: "0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b", groups: [], conversations: 0 },
  ),
};
