/** Contract samples of the `connections` commands (test/cli/result-samples.ts). */
import type ConnectionsKick from "../../../cli/commands/connections/kick.js";
import type ConnectionsList from "../../../cli/commands/connections/list.js";
import { samplesOf, type ResultOf } from "../result-samples.js";

const tenant = "8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c";
const user = "0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b";
const row = {
  nodeId: "dev-1", user, device: "phone-1", sinceMs: 1796000000123, remoteAddress: "127.0.0.1",
  framesIn: 12, framesOut: 240, bufferedBytes: 0,
};

export const samples = {
  "connections list": samplesOf<ResultOf<typeof ConnectionsList>>(
    { tenant, connections: [row], truncated: false, unreachableNodes: [], answeredBy: "dev-1" },
    { tenant, connections: [{ ...row, nodeId: null }], truncated: true, unreachableNodes: ["dev-3"], answeredBy: null },
  ),
  "connections kick": samplesOf<ResultOf<typeof ConnectionsKick>>(
    { tenant, user, device: "phone-1", closed: 1, nodes: ["dev-2"], unreachableNodes: [] },
    { tenant, user, device: null, closed: 0, nodes: [], unreachableNodes: ["dev-3"] },
  ),
};
