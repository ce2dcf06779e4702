import { CONNECTIONS_LIST_LIMIT, InvalidArgumentError, pageLimit, parseUuid } from "../../../../core/index.js";
import { catalogEntry } from "../../../../admin-api/catalog.js";
import { ALL_ROLES, defineService, MUTATE, unary } from "../../../pipeline/rpc.js";

/**
 * ConnectionService (issue 27): operators' list and kick of device connections across the cluster,
 * through core/delivery's ConnectionsView. A kick mutates: the pipeline audits it (the request —
 * tenant, user, device — and the detail below).
 */
const NODE_ID = /^[A-Za-z0-9._-]{1,64}$/;
/** A device id as tokens carry it: 1 to 64 printable ASCII characters (a kick of another shape could match nothing). */
const DEVICE_ID = /^[\x21-\x7e]{1,64}$/;

export const connectionService = defineService(catalogEntry("qim.admin.v1.ConnectionService"), {
  listConnections: unary({
    roles: ALL_ROLES, mutates: false,
    async handle(req, { deps }) {
      const tenant = parseUuid(req.tenant, "tenant");
      const user = req.user === "" ? undefined : parseUuid(req.user, "user");
      const node = req.nodeId.trim();
      if (node !== "" && !NODE_ID.test(node)) throw new InvalidArgumentError("node_id", `not a node id: ${JSON.stringify(node.slice(0, 70))} (qimctl cluster nodes lists them)`);
      const limit = Number(pageLimit(req.limit, { default: 100, max: CONNECTIONS_LIST_LIMIT }));
      const r = await deps.runtime.delivery.connections.list({ tenant, ...(user ? { user } : {}), ...(node !== "" ? { node } : {}), limit });
      return {
        response: {
          connections: r.connections.map((c) => ({
            nodeId: c.nodeId, user: c.user, device: c.device, sinceMs: BigInt(c.sinceMs), remoteAddress: c.remote,
            framesIn: BigInt(c.framesIn), framesOut: BigInt(c.framesOut), bufferedBytes: BigInt(c.bufferedBytes),
          })),
          truncated: r.truncated, unreachableNodes: r.unreachable, answeredBy: deps.runtime.cluster?.nodeId ?? "",
        },
      };
    },
  }),
  kickConnections: unary({
    roles: MUTATE, mutates: true,
    async handle(req, { deps }) {
      const tenant = parseUuid(req.tenant, "tenant");
      const user = parseUuid(req.user, "user");
      if (req.device !== "" && !DEVICE_ID.test(req.device)) throw new InvalidArgumentError("device", "a device id is 1 to 64 printable ASCII characters");
      const device = req.device === "" ? null : req.device;
      const r = await deps.runtime.delivery.connections.kick(tenant, user, device);
      return {
        response: { closed: r.closed, nodes: r.nodes, unreachableNodes: r.unreachable },
        detail: `closed ${r.closed} connection(s) of user ${user}${device ? ` device ${device}` : ""}${r.nodes.length > 0 ? ` on ${r.nodes.join(", ")}` : ""}${r.unreachable.length > 0 ? `; unreachable: ${r.unreachable.join(", ")}` : ""}`,
      };
    },
  }),
});
