import { FailedPreconditionError, InvalidArgumentError, NotFoundError, RELAY_BUCKET_COUNT, parseUuid, slotOfUser, type ClusterMembership, type NodeRecord, type UnitKind, type UnitOwner } from "../../../../core/index.js";
import { catalogEntry } from "../../../../admin-api/catalog.js";
import { clusterNodeOut as nodeOut } from "../../../convert.js";
import type { GetOwnerResponse, OwnedUnits } from "../../../../admin-api/gen/qim/admin/v1/cluster.js";
import { cmdBadFiles } from "../../../routing/cmd-bad.js";
import { ALL_ROLES, defineService, MUTATE, unary, type ServerDeps } from "../../../pipeline/rpc.js";

const ownedOut = (o: NodeRecord["owned"]): OwnedUnits => ({ relayBuckets: o.relayBuckets, partitions: o.partitions, slots: o.slots, rooms: o.rooms });

function ownerOut(o: UnitOwner): GetOwnerResponse {
  return { kind: o.kind, unit: o.unit, nodeId: o.nodeId ?? "", address: o.address ?? "", token: BigInt(o.token), alive: o.alive };
}

function clusterOf(deps: ServerDeps): ClusterMembership {
  if (!deps.runtime.cluster) throw new FailedPreconditionError("this server is not a node of an engine cluster (it runs without a node id): it owns every unit alone");
  return deps.runtime.cluster;
}

/** ClusterService: the engine cluster's nodes, the owner of a unit, drain (issue 11) and undrain (issue 24). */
export const clusterService = defineService(catalogEntry("qim.admin.v1.ClusterService"), {
  listNodes: unary({
    roles: ALL_ROLES, mutates: false,
    async handle(_req, { deps }) {
      const cluster = clusterOf(deps);
      const [nodes, bad, connections] = await Promise.all([cluster.nodes(), cmdBadFiles(deps.runtime), deps.runtime.delivery.registry.counts()]);
      const badOf = new Map(bad.map((b) => [b.nodeId, b.path]));
      return { response: { nodes: nodes.map((n) => nodeOut(n, badOf.get(n.nodeId) ?? "", connections.get(n.nodeId))), answeredBy: cluster.nodeId } };
    },
  }),
  getOwner: unary({
    roles: ALL_ROLES, mutates: false,
    async handle(req, { deps }) {
      // the request is checked first: a malformed one is INVALID_ARGUMENT on every server
      const u = req.unit;
      if (!u) throw new InvalidArgumentError("unit", "name exactly one unit: a user (tenant and user), a partition or a bucket");
      let kind: UnitKind;
      let unit: number;
      if (u.$case === "user") {
        kind = "slot";
        unit = slotOfUser(parseUuid(u.user.tenant, "user.tenant"), parseUuid(u.user.user, "user.user"));
      } else if (u.$case === "partition") {
        const count = deps.runtime.dispatchLog.identity.partitionCount;
        if (u.partition >= count) throw new InvalidArgumentError("partition", `partition ${u.partition} does not exist: the dispatch log has partitions 0 … ${count - 1}`);
        [kind, unit] = ["partition", u.partition];
      } else {
        if (u.bucket >= RELAY_BUCKET_COUNT) throw new InvalidArgumentError("bucket", `bucket ${u.bucket} does not exist: relay buckets are 0 … ${RELAY_BUCKET_COUNT - 1}`);
        [kind, unit] = ["relay", u.bucket];
      }
      return { response: ownerOut(await clusterOf(deps).ownerOf(kind, unit)) };
    },
  }),
  drain: unary({
    roles: MUTATE, mutates: true,
    async handle(req, { deps }) {
      const nodeId = req.nodeId.trim();
      if (nodeId === "") throw new InvalidArgumentError("node_id", "name the node to drain (qimctl cluster nodes lists them)");
      const cluster = clusterOf(deps);
      const node = (await cluster.nodes()).find((n) => n.nodeId === nodeId);
      if (!node) throw new NotFoundError("node", nodeId);
      if (node.draining) {
        return { response: { nodeId, changed: false, handedOver: ownedOut(node.owned) }, detail: `node ${nodeId} is draining already; nothing changed` };
      }
      await cluster.drain(nodeId);
      const o = node.owned;
      return {
        response: { nodeId, changed: true, handedOver: ownedOut(o) },
        detail: `node ${nodeId} drained: ${o.relayBuckets} relay bucket(s), ${o.partitions} partition(s), ${o.slots} slot(s), ${o.rooms} room unit(s) handed over; it takes no new units`,
      };
    },
  }),
  undrain: unary({
    roles: MUTATE, mutates: true,
    async handle(req, { deps }) {
      const nodeId = req.nodeId.trim();
      if (nodeId === "") throw new InvalidArgumentError("node_id", "name the node to undrain (qimctl cluster nodes lists them)");
      const cluster = clusterOf(deps);
      const node = (await cluster.nodes()).find((n) => n.nodeId === nodeId);
      if (!node) throw new NotFoundError("node", nodeId);
      // the flag itself decides: a drain racing this call is undone as well, and said so
      const changed = await cluster.undrain(nodeId);
      return {
        response: { nodeId, changed },
        detail: changed ? `node ${nodeId} undrained: it takes its share of units again` : `node ${nodeId} is not draining; nothing changed`,
      };
    },
  }),
});
