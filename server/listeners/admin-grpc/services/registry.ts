import {
  BUILT_IN_BY_NAME, checkChangeSize, parseDeclaration, parseUuid, SPEC_NAMES, type TypeChange,
} from "../../../../core/index.js";
import { catalogEntry } from "../../../../admin-api/catalog.js";
import type { MessageTypeSpec } from "../../../../admin-api/gen/qim/admin/v1/registry.js";
import { ALL_ROLES, defineService, MUTATE, unary } from "../../../pipeline/rpc.js";

/**
 * RegistryService (issue 29): the tenant's custom message type registry. ApplyTypes mutates, so
 * the pipeline audits it: the request, and the detail below naming the version step and each type
 * changed. Each declaration is checked whole by core/registry parseDeclaration (defaults included).
 */

/** A spec as given (absent fields absent) in the spec-named form parseDeclaration reads. */
function specObject(s: MessageTypeSpec): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  for (const [k, name] of Object.entries(SPEC_NAMES)) {
    const v = (s as unknown as Record<string, unknown>)[k];
    if (v !== undefined) o[name] = v;
  }
  return o;
}

function changeOut(c: TypeChange) {
  return { customType: c.customType, action: c.action, fields: c.fields, before: c.before ?? undefined, after: c.after ?? undefined };
}

export const registryService = defineService(catalogEntry("qim.admin.v1.RegistryService"), {
  applyTypes: unary({
    roles: MUTATE, mutates: true,
    async handle(req, { deps }) {
      const tenant = parseUuid(req.tenant, "tenant");
      // the sizes before any declaration is parsed: a 4 MB request of declarations is refused at once
      checkChangeSize(req.put.length, req.delete.length);
      const put = req.put.map((s, i) => parseDeclaration(specObject(s), `put[${i}]`));
      const r = await deps.runtime.messageTypes.apply({
        tenant, put, delete: req.delete, prune: req.prune, ignoreMissing: req.ignoreMissing,
        expectVersion: req.expectVersion === undefined ? null : Number(req.expectVersion), dryRun: req.dryRun,
      });
      const effective = r.changes.filter((c) => c.action !== "unchanged");
      const what = effective.map((c) => `${c.action} ${c.customType}${c.fields.length > 0 ? ` (${c.fields.join(", ")})` : ""}`).join("; ");
      return {
        response: { tenant, fromVersion: BigInt(r.fromVersion), version: BigInt(r.version), changed: r.changed, changes: r.changes.map(changeOut), dryRun: r.dryRun },
        detail: r.dryRun ? `dry run at registry version ${r.fromVersion}: would ${what || "change nothing"}`
          : r.changed ? `registry version ${r.fromVersion} -> ${r.version}: ${what}` : `registry version ${r.version}: nothing changed`,
      };
    },
  }),
  getType: unary({
    roles: ALL_ROLES, mutates: false,
    async handle(req, { deps }) {
      const tenant = parseUuid(req.tenant, "tenant");
      const r = await deps.runtime.messageTypes.get(tenant, req.customType);
      return { response: { type: r.declaration, builtIn: r.builtIn, declared: r.declared, version: BigInt(r.version) } };
    },
  }),
  listTypes: unary({
    roles: ALL_ROLES, mutates: false,
    async handle(req, { deps }) {
      const tenant = parseUuid(req.tenant, "tenant");
      const s = await deps.runtime.messageTypes.read(tenant);
      const types = [...s.types.values()].sort((a, b) => (a.customType < b.customType ? -1 : 1))
        .map((d) => ({ type: d, builtIn: BUILT_IN_BY_NAME.has(d.customType), declared: s.declared.has(d.customType) }));
      return { response: { tenant, version: BigInt(s.version), types } };
    },
  }),
});
