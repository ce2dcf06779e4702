/**
 * How core/rooms reaches the other nodes (RoomTransport) over NodeService.Rooms: writer calls go
 * through the router to the owner of the room's unit (re-resolved and retried once on a stale
 * owner), node calls to one node by id. A refusal the engine made on the other side (room_msg_rate,
 * a promoted room) comes back as the same error class (core/rooms roomErrorOf).
 */
import { roomErrorOf, UnavailableError, type RoomAnswer, type RoomTransport } from "../../core/index.js";
import { NodeStatus, type RoomsResponse } from "../../admin-api/gen/qim/node/v1/node.js";
import type { NodePeers } from "./client.js";
import type { NodeHandlers } from "./local.js";
import { nodeMetrics } from "./metrics.js";
import { answerIn, callOut } from "./rooms-wire.js";
import { hintOut, type NodeRouter } from "./router.js";

function answered(res: RoomsResponse, who: string): RoomAnswer {
  if (res.status !== NodeStatus.NODE_STATUS_OK) throw new UnavailableError(`Rooms at ${who}: ${res.detail}`);
  if (res.errorCode !== "") {
    let details: Record<string, unknown> = {};
    try {
      details = JSON.parse(res.errorDetails || "{}") as Record<string, unknown>;
    } catch {
      // the code and message stand without them
    }
    throw roomErrorOf(res.errorCode, res.detail, details);
  }
  return answerIn(res.answer);
}

export function roomTransport(opts: {
  router: NodeRouter;
  self: string;
  local: NodeHandlers;
  peers: NodePeers;
  /** A live node's node-RPC address by its id (the cluster's registry as the last heartbeat saw it). */
  addressOf(nodeId: string): string | null;
}): RoomTransport {
  const { router, self, local, peers } = opts;
  return {
    async writer(unit, call) {
      const req = { fromNodeId: self, call: callOut(call) };
      const r = await router.route("Rooms", "room", unit, (h) => h.rooms(req), (res) => hintOut(res.owner));
      return answered(r.response, r.owner.nodeId ?? "?");
    },
    async node(nodeId, call) {
      const req = { fromNodeId: self, call: callOut(call) };
      if (nodeId === self) return answered(await local.rooms(req), "this node");
      const address = opts.addressOf(nodeId);
      if (!address) throw new UnavailableError(`node ${nodeId} is not live (or registered no node address)`);
      let res: RoomsResponse;
      try {
        res = await peers.at(address).rooms(req);
      } catch (err) {
        nodeMetrics.calls.inc({ rpc: "Rooms", target: "remote", status: "ERROR" });
        throw err;
      }
      nodeMetrics.calls.inc({ rpc: "Rooms", target: "remote", status: res.status === NodeStatus.NODE_STATUS_OK ? "OK" : "REJECTED" });
      return answered(res, nodeId);
    },
    async ownerOf(unit) {
      return (await router.resolve("room", unit)).nodeId;
    },
  };
}
