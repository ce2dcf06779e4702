/** Contract samples of the `cluster` commands (test/cli/result-samples.ts). */
import type ClusterDrain from "../../../cli/commands/cluster/drain.js";
import type ClusterNodes from "../../../cli/commands/cluster/nodes.js";
import type ClusterOwner from "../../../cli/commands/cluster/owner.js";
import type ClusterUndrain from "../../../cli/commands/cluster/undrain.js";
import { samplesOf, type ResultOf } from "../result-samples.js";

const node: ResultOf<typeof ClusterNodes>["nodes"][number] = {
  nodeId: "node-1", address: "localhost:7601", version: "0.1.0", startedAtMs: 1795990116099, heartbeatAgeMs: 180,
  alive: true, draining: false, units: ["relay", "partition", "slot"], owned: { relayBuckets: 128, partitions: 4, slots: 128, rooms: 0 }, cmdBadFile: null, connections: 1204,
};

export const samples = {
  "cluster nodes": samplesOf<ResultOf<typeof ClusterNodes>>(
    { nodes: [node, { ...node, nodeId: "node-2", address: "localhost:7602", heartbeatAgeMs: 9000, alive: false, draining: true, owned: { relayBuckets: 0, partitions: 0, slots: 0, rooms: 0 }, connections: null, cmdBadFile: "/var/lib/qim/conversationv2/cmd_conversation_updates.json.bad" }], answeredBy: "node-1" },
    { nodes: [], answeredBy: "node-1" },
  ),
  "cluster owner": samplesOf<ResultOf<typeof ClusterOwner>>(
    { kind: "slot", unit: 17, user: { tenant: "8f14e45f-ceea-4a67-9c1b-2d3e4f5a6b7c", user: "0d7e2c4a-1b3f-4e5d-8c9a-7b6f5e4d3c2b" }, nodeId: "node-1", address: "localhost:7601", token: 3, alive: true },
    { kind: "relay", unit: 200, user: null, nodeId: null, address: null, token: 7, alive: false },
  ),
  "cluster drain": samplesOf<ResultOf<typeof ClusterDrain>>(
    { nodeId: "node-2", changed: true, handedOver: { relayBuckets: 128, partitions: 4, slots: 128, rooms: 0 } },
    { nodeId: "node-2", changed: false, handedOver: { relayBuckets: 0, partitions: 0, slots: 0, rooms: 0 } },
  ),
  "cluster undrain": samplesOf<ResultOf<typeof ClusterUndrain>>(
    { nodeId: "node-2", changed: true },
    { nodeId: "node-2", changed: false },
  ),
};
