import {
  checkClassName, checkRule, effectiveRule, InvalidArgumentError, pageLimit, parseUuid, type EngineRuntime, type RetentionPolicy, type RetentionRule, type Uuid,
} from "../../../../core/index.js";
import { catalogEntry } from "../../../../admin-api/catalog.js";
import type { GetRetentionResponse, RetentionRule as WireRule } from "../../../../admin-api/gen/qim/admin/v1/retention.js";
import { ALL_ROLES, defineService, MUTATE, unary } from "../../../pipeline/rpc.js";

/**
 * RetentionService (issue 26, docs/retention.md): a tenant's policy and a group's own setting
 * (core/retention's RetentionPolicies), and a trimming round now (RetentionTrimmer.runRound). The
 * changes and a round that trims mutate: the pipeline audits them with the detail below.
 */

/** Conversations and CMD channels a round's answer lists at most. */
const RUN_LIST_LIMIT = 1000;

function ruleIn(field: string, r: WireRule | undefined): RetentionRule | null {
  if (!r) return null;
  const n = (v: bigint, k: string) => {
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new InvalidArgumentError(`${field}.${k}`, `${field}.${k} is at most 2^53-1`);
    return Number(v);
  };
  return checkRule(field, { maxAgeMs: n(r.maxAgeMs, "max_age_ms"), maxCount: n(r.maxCount, "max_count") });
}

const ruleOut = (r: RetentionRule): WireRule => ({ maxAgeMs: BigInt(r.maxAgeMs), maxCount: BigInt(r.maxCount) });
const ruleText = (r: RetentionRule | null) => (r === null ? "none" : `max age ${r.maxAgeMs} ms, max count ${r.maxCount}`);

/** The answer of every RPC but RunRetention: the tenant's policy, and the group's setting when one is named. */
async function describe(runtime: EngineRuntime, tenant: Uuid, group: Uuid | null): Promise<GetRetentionResponse> {
  const policies = runtime.retention.policies;
  const policy: RetentionPolicy | null = await policies.tenant(tenant);
  const out: GetRetentionResponse = {
    tenant, hasPolicy: policy !== null, defaultClass: policy?.defaultClass ?? "",
    classes: Object.entries(policy?.classes ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([name, rule]) => ({ name, rule: ruleOut(rule) })),
  };
  if (group !== null) {
    const g = await policies.group(tenant, group);
    const { rule, source } = effectiveRule(policy, g);
    out.group = { group, retentionClass: g?.retentionClass ?? "", ...(g?.rule ? { rule: ruleOut(g.rule) } : {}), effectiveSource: source, effectiveRule: ruleOut(rule) };
  }
  return out;
}

/** A group must exist before a setting is written for it (a typo would otherwise hold a rule for nothing). */
async function existingGroup(runtime: EngineRuntime, tenant: Uuid, groupText: string): Promise<Uuid> {
  const group = parseUuid(groupText, "group");
  await runtime.conversations.getGroup(tenant, group);
  return group;
}

export const retentionService = defineService(catalogEntry("qim.admin.v1.RetentionService"), {
  getRetention: unary({
    roles: ALL_ROLES, mutates: false,
    async handle(req, { deps }) {
      const tenant = parseUuid(req.tenant, "tenant");
      const group = req.group === "" ? null : await existingGroup(deps.runtime, tenant, req.group);
      return { response: await describe(deps.runtime, tenant, group) };
    },
  }),
  setRetentionClass: unary({
    roles: MUTATE, mutates: true,
    async handle(req, { deps }) {
      const tenant = parseUuid(req.tenant, "tenant");
      const name = checkClassName("name", req.name);
      const rule = ruleIn("rule", req.rule);
      if (rule === null && req.makeDefault) throw new InvalidArgumentError("make_default", "a class being removed cannot become the default: give it a rule, or make another class the default");
      await deps.runtime.retention.policies.setTenantClass(tenant, name, rule, req.makeDefault);
      return {
        response: await describe(deps.runtime, tenant, null),
        detail: `tenant ${tenant} class ${name}: ${rule === null ? "removed" : ruleText(rule)}${req.makeDefault ? " (the default class)" : ""}`,
      };
    },
  }),
  setGroupRetention: unary({
    roles: MUTATE, mutates: true,
    async handle(req, { deps }) {
      const tenant = parseUuid(req.tenant, "tenant");
      const retentionClass = req.retentionClass === "" ? null : checkClassName("retention_class", req.retentionClass);
      const rule = ruleIn("rule", req.rule);
      const group = await existingGroup(deps.runtime, tenant, req.group);
      await deps.runtime.retention.policies.setGroup(tenant, group, { retentionClass, rule });
      return {
        response: await describe(deps.runtime, tenant, group),
        detail: retentionClass === null && rule === null ? `group ${group}: own setting removed (the tenant's default class)` : `group ${group}: class ${retentionClass ?? "none"}, rule ${ruleText(rule)}`,
      };
    },
  }),
  runRetention: unary({
    // an operator's act, audited also when dry (what it would remove is shown to whoever asked)
    roles: MUTATE, mutates: true,
    async handle(req, { deps }) {
      const tenant = parseUuid(req.tenant, "tenant");
      const limit = Number(pageLimit(req.limit, { default: 100, max: RUN_LIST_LIMIT }));
      // one more than listed: whether more had something to trim
      const r = await deps.runtime.retention.runRound({ dryRun: req.dryRun, tenant, listLimit: limit + 1 });
      const response = {
        dryRun: r.dryRun, bucketsOwned: r.bucketsOwned, conversations: BigInt(r.conversations), historyRemoved: BigInt(r.histRemoved),
        unreadIndexRemoved: BigInt(r.idxRemoved), idempotencyRemoved: BigInt(r.idemRemoved), behind: BigInt(r.behind + r.cmd.behind), skipped: BigInt(r.skipped),
        trims: r.trims.slice(0, limit).map((t) => ({
          group: t.conversation, source: t.source, earliestBefore: BigInt(t.earliestBefore), earliestAfter: BigInt(t.earliestAfter),
          historyRemoved: BigInt(t.histRemoved), unreadIndexRemoved: BigInt(t.idxRemoved), idempotencyRemoved: BigInt(t.idemRemoved), more: t.more, skipped: t.skipped ?? "",
        })),
        cmdChannels: BigInt(r.cmd.channels), cmdHistoryRemoved: BigInt(r.cmd.histRemoved), cmdIdempotencyRemoved: BigInt(r.cmd.idemRemoved),
        cmdTrims: r.cmd.trims.slice(0, limit).map((t) => ({
          channelType: t.channelType, channelId: t.channelId, source: t.source, historyRemoved: BigInt(t.histRemoved), idempotencyRemoved: BigInt(t.idemRemoved), more: t.more,
          ackedThrough: BigInt(t.ackedThrough),
        })),
        truncated: r.stoppedEarly || r.trims.length > limit || r.cmd.trims.length > limit,
        answeredBy: deps.runtime.cluster?.nodeId ?? "",
      };
      return {
        response,
        detail: `${r.dryRun ? "dry run, would remove: " : ""}tenant ${tenant}: ${r.histRemoved} history, ${r.idxRemoved} unread index, ${r.idemRemoved} idempotency entries of ${r.conversations} conversation(s); ${r.cmd.histRemoved} CMD history entries of ${r.cmd.channels} channel(s); ${r.bucketsOwned} bucket(s) owned`,
      };
    },
  }),
});
