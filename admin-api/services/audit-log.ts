import { InvalidArgumentError } from "../../core/index.js";
import { catalogEntry } from "../catalog.js";
import { defineService, unary } from "../rpc.js";

/** Entries of one TailAudit call: default and most. */
export const TAIL_AUDIT_LIMIT = { default: 50, max: 1000 } as const;

/** AuditService: the newest entries of the append-only audit log (the drill role may not read arguments). */
export const auditService = defineService(catalogEntry("qim.admin.v1.AuditService"), {
  tailAudit: unary({
    roles: ["admin", "operator", "viewer"], mutates: false,
    async handle(req, { deps }) {
      const limit = req.limit === 0 ? TAIL_AUDIT_LIMIT.default : req.limit;
      if (limit > TAIL_AUDIT_LIMIT.max) throw new InvalidArgumentError("limit", `limit is at most ${TAIL_AUDIT_LIMIT.max}`);
      const entries = await deps.audit.tail(limit);
      return {
        response: {
          entries: entries.map((e) => ({
            time: e.time, principal: e.principal, role: e.role, rpc: e.rpc, argumentsJson: JSON.stringify(e.arguments),
            result: e.result, detail: e.detail, durationMs: e.durationMs, requestId: e.requestId, fingerprint: e.fingerprint,
          })),
        },
      };
    },
  }),
});
