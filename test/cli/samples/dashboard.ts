/** Contract samples of `dashboard --output json`: one object per line (test/cli/result-samples.ts). */
import { keyedByData, lineSamplesOf } from "../result-samples.js";
import { status } from "./projection.js";
import type { DashboardLine } from "../../../cli/dashboard/model.js";

const line: DashboardLine = {
  time: "2026-11-29T23:00:01.042Z",
  timeMs: 1795993201042,
  startedAtMs: 1795990000000,
  rates: null,
  counters: {
    membershipEvents: keyedByData({ join: 7, leave: 0, remove: 2 }),
    membershipRetries: keyedByData({ send: 0, membership: 0 }),
    conversationStateQueuedTotal: 12,
    conversationStateWritten: 12,
    conversationStateFailures: 0,
    usersRebuilt: 4,
    messagesCommitted: 30,
    relayDispatched: 30,
  },
  projection: status,
  audit: [{ time: "2026-11-29T22:59:58.120Z", principal: "oscar", rpc: "/qim.admin.v1.GroupService/AddMembers", result: "OK" }],
  nodes: [{
    nodeId: "node-1", address: "localhost:7601", version: "0.1.0", startedAtMs: 1795990000000, heartbeatAgeMs: 240,
    alive: true, draining: false, units: ["relay", "partition", "slot"], owned: { relayBuckets: 256, partitions: 8, slots: 256, rooms: 0 }, cmdBadFile: null, connections: 3,
  }, {
    nodeId: "node-2", address: "localhost:7602", version: "0.1.0", startedAtMs: 1795990000000, heartbeatAgeMs: 300,
    alive: true, draining: false, units: ["relay", "partition", "slot"], owned: { relayBuckets: 0, partitions: 0, slots: 0, rooms: 0 }, cmdBadFile: null, connections: null,
  }],
  cmdBadFiles: [],
  devices: {
    connections: 3, onlineUsers: 2, framesIn: 100, framesOut: 400, pushes: 300, backPressureSoft: 1, backPressureHard: 0, upgradesRefused: 2, deliveryLag: 0,
    commitToPush: [{ leMs: 1, count: 0 }, { leMs: 5, count: 200 }, { leMs: 25, count: 298 }, { leMs: 100, count: 300 }, { leMs: null, count: 300 }],
  },
};

export const samples = {
  dashboard: lineSamplesOf<DashboardLine>(line, {
    ...line,
    rates: {
      overMs: 1000,
      membershipEventsPerSec: 1,
      membershipRetriesPerSec: 0,
      messagesCommittedPerSec: 3,
      relayDispatchedPerSec: 3,
      conversationStateQueuedPerSec: 0,
      conversationStateWrittenPerSec: 2,
      conversationStateFailuresPerSec: 0,
      usersRebuiltPerSec: 0,
      framesInPerSec: 4,
      framesOutPerSec: 20,
      pushesPerSec: 18,
      commitToPushP99Ms: 25,
    },
    audit: [],
    nodes: [{ ...line.nodes[0]!, cmdBadFile: "/var/lib/qim/node-1/conversationv2/cmd_conversation_updates.json.bad" }],
    cmdBadFiles: [{ nodeId: "node-1", path: "/var/lib/qim/node-1/conversationv2/cmd_conversation_updates.json.bad", setAsideAt: "2026-11-29T22:40:00.000Z" }, { nodeId: null, path: "/var/lib/qim/conversationv2/cmd_conversation_updates.json.bad", setAsideAt: null }],
  }, {
    ...line,
    // nothing pushed between the two snapshots: no commit-to-push p99
    rates: {
      overMs: 1000, membershipEventsPerSec: 0, membershipRetriesPerSec: 0, messagesCommittedPerSec: 0, relayDispatchedPerSec: 0, conversationStateQueuedPerSec: 0,
      conversationStateWrittenPerSec: 0, conversationStateFailuresPerSec: 0, usersRebuiltPerSec: 0, framesInPerSec: 0, framesOutPerSec: 0, pushesPerSec: 0, commitToPushP99Ms: null,
    },
  }),
};
