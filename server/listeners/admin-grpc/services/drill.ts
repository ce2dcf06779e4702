import { InvalidArgumentError, parseReason, runRebuildDrill, type DrillWipe } from "../../../../core/index.js";
import { catalogEntry } from "../../../../admin-api/catalog.js";
import { describeDrill, drillProgressOut, drillReportOut } from "../../../convert.js";
import { defineService, serverStream } from "../../../pipeline/rpc.js";

/**
 * DrillService: the rebuild drill (CI), progress streamed, the report last. One drill at a time
 * across every server (RebuildDrill takes a lock in Redis). It wipes and rebuilds projection
 * state, so it is audited like a mutation; the drill role may run it but not bump the epoch.
 */
export const drillService = defineService(catalogEntry("qim.admin.v1.DrillService"), {
  runRebuildDrill: serverStream({
    openEnded: false,
    roles: ["admin", "drill"], mutates: true,
    async handle(req, { deps, principal, send }) {
      const wipe = req.wipe === "" ? "projection" : req.wipe;
      if (req.users.length > 0 && req.sample !== undefined) throw new InvalidArgumentError("sample", "give users or sample, not both");
      const reason = parseReason(req.reason, "reason", { required: false });
      const report = await runRebuildDrill({ drill: deps.runtime.projection.drill, conversationList: deps.runtime.conversationList }, {
        ...(req.users.length > 0 ? { users: req.users.map((u) => ({ tenant: u.tenant, user: u.user })) } : {}),
        ...(req.sample !== undefined ? { sample: req.sample } : {}),
        wipe: wipe as DrillWipe,
        by: principal.name,
        ...(reason ? { reason } : {}),
        onProgress: (pr) => send({ event: { $case: "progress" as const, progress: drillProgressOut(pr) } }),
      });
      return { last: { event: { $case: "report" as const, report: drillReportOut(report) } }, detail: describeDrill(report) };
    },
  }),
});
