import { EPOCH_HISTORY_LIMIT, pageLimit, parseReason } from "../../../../core/index.js";
import { catalogEntry } from "../../../../admin-api/catalog.js";
import { epochBumpOut, projectionStatusOut } from "../../../convert.js";
import { ALL_ROLES, defineService, MUTATE, unary } from "../../../pipeline/rpc.js";

/** ProjectionService: the session projection's epoch, per-user rebuild and status (ADR-0021 §4). */
export const projectionService = defineService(catalogEntry("qim.admin.v1.ProjectionService"), {
  getEpoch: unary({
    roles: ALL_ROLES, mutates: false,
    async handle(req, { deps }) {
      const limit = pageLimit(req.limit, EPOCH_HISTORY_LIMIT);
      const epoch = deps.runtime.projection.epoch;
      const [current, bumps] = await Promise.all([epoch.get(), epoch.history(limit)]);
      return { response: { epoch: BigInt(current), bumps: bumps.map(epochBumpOut) } };
    },
  }),
  bumpEpoch: unary({
    roles: MUTATE, mutates: true,
    async handle(req, { deps, principal }) {
      const reason = parseReason(req.reason, "reason", { required: true });
      const b = await deps.runtime.projection.epoch.bump(reason, principal.name);
      return { response: epochBumpOut(b), detail: `epoch bumped to ${b.epoch}: ${reason}` };
    },
  }),
  rebuildUser: unary({
    roles: MUTATE, mutates: true,
    async handle(req, { deps }) {
      const r = await deps.runtime.projection.sessions.rebuildUser(req.tenant, req.user, { force: req.force });
      return {
        response: { epoch: BigInt(r.epoch), rebuilt: r.rebuilt, merged: r.merged, mark: BigInt(r.mark) },
        detail: r.rebuilt ? `rebuilt user ${req.user}: merged ${r.merged} conversation(s) from the authority at epoch ${r.epoch}`
          : `nothing to do: user ${req.user}'s mark ${r.mark} is current (epoch ${r.epoch}); force rebuilds anyway`,
      };
    },
  }),
  getStatus: unary({
    roles: ALL_ROLES, mutates: false,
    handle: async (_req, { deps }) => ({ response: projectionStatusOut(await deps.runtime.projection.status()) }),
  }),
});
