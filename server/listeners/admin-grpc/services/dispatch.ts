import { catalogEntry } from "../../../../admin-api/catalog.js";
import { partitionOut } from "../../../convert.js";
import { ALL_ROLES, defineService, unary } from "../../../pipeline/rpc.js";

/** DispatchService: the dispatch log's retention-window audit, one verdict per partition. */
export const dispatchService = defineService(catalogEntry("qim.admin.v1.DispatchService"), {
  audit: unary({
    roles: ALL_ROLES, mutates: false,
    async handle(_req, { deps }) {
      const audits = await deps.runtime.projection.projector.audit();
      return { response: { ok: audits.every((a) => a.verdict === "OK"), partitions: audits.map(partitionOut) } };
    },
  }),
});
