import { status } from "@grpc/grpc-js";
import { InvalidArgumentError, TAIL_AUDIT_LIMIT } from "../../../../core/index.js";
import { auditEntryOut, FOLLOW_BEHIND_MAX, followAudit } from "../audit-follow.js";
import { catalogEntry } from "../../../../admin-api/catalog.js";
import { defineService, serverStream, unary } from "../../../pipeline/rpc.js";

/** AuditService: the newest entries of the append-only audit log, and the log as it is written (the drill role may not read arguments). */
export const auditService = defineService(catalogEntry("qim.admin.v1.AuditService"), {
  tailAudit: unary({
    roles: ["admin", "operator", "viewer"], mutates: false,
    async handle(req, { deps }) {
      const limit = req.limit === 0 ? TAIL_AUDIT_LIMIT.default : req.limit;
      if (limit > TAIL_AUDIT_LIMIT.max) throw new InvalidArgumentError("limit", `limit is at most ${TAIL_AUDIT_LIMIT.max}`);
      const entries = await deps.audit.tail(limit);
      return { response: { entries: entries.map(auditEntryOut) } };
    },
  }),
  followAudit: serverStream({
    openEnded: true,
    roles: ["admin", "operator", "viewer"], mutates: false,
    async handle(req, { deps, admit, call }) {
      if (req.limit > TAIL_AUDIT_LIMIT.max) throw new InvalidArgumentError("limit", `limit is at most ${TAIL_AUDIT_LIMIT.max} (0: only entries written from now on)`);
      const end = await followAudit(deps.audit, call, req.limit, admit);
      if (end === "shutdown") return { error: { code: status.UNAVAILABLE, domainCode: "UNAVAILABLE", message: "the admin server is shutting down" } };
      if (end === "behind") return { error: { code: status.UNAVAILABLE, domainCode: "UNAVAILABLE", message: `this follower fell more than ${FOLLOW_BEHIND_MAX} audit entries behind; follow again` } };
      return {};
    },
  }),
});
