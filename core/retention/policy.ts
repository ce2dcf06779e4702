import { checkClassName, hexToUuid, InvalidArgumentError, type KeySpace, type Uuid, type UuidHex } from "../base/index.js";
import type { RedisStore } from "../store/index.js";
import { groupRetentionKey, retentionPolicyKey } from "./keys.js";

/**
 * A retention rule (spec 000's `retention_class` made concrete, issue 26): a message is trimmed
 * once it is older than `maxAgeMs` OR once more than `maxCount` conversation_seqs follow it.
 * 0 turns that limit off; a rule with both 0 keeps everything.
 */
export interface RetentionRule {
  maxAgeMs: number;
  maxCount: number;
}

/** A tenant's policy: its classes by name and the class of a conversation with no setting of its own. */
export interface RetentionPolicy {
  defaultClass: string;
  classes: Record<string, RetentionRule>;
}

/** A group's own setting: a class of its tenant's policy, or a rule of its own (which wins). */
export interface GroupRetention {
  retentionClass: string | null;
  rule: RetentionRule | null;
}

/** The class a tenant's conversations are in when nobody said otherwise. */
export const DEFAULT_RETENTION_CLASS = "standard";
export const KEEP_EVERYTHING: RetentionRule = Object.freeze({ maxAgeMs: 0, maxCount: 0 });

export function checkRule(field: string, rule: RetentionRule): RetentionRule {
  for (const [k, v] of Object.entries(rule) as [keyof RetentionRule, number][]) {
    if (!Number.isSafeInteger(v) || v < 0) throw new InvalidArgumentError(`${field}.${k}`, `${field}.${k} must be a whole number ≥ 0 (0: no limit), got ${v}`);
  }
  return { maxAgeMs: rule.maxAgeMs, maxCount: rule.maxCount };
}

const encodeRule = (r: RetentionRule) => `${r.maxAgeMs}|${r.maxCount}`;
function decodeRule(v: string): RetentionRule {
  const [age, count] = v.split("|");
  return { maxAgeMs: Number(age) || 0, maxCount: Number(count) || 0 };
}

/** What trims a conversation: the group's own rule, else its class's rule, else nothing (with the reason). */
export function effectiveRule(policy: RetentionPolicy | null, group: GroupRetention | null): { rule: RetentionRule; source: string } {
  if (group?.rule) return { rule: group.rule, source: "group" };
  if (!policy) return { rule: KEEP_EVERYTHING, source: "none" };
  const name = group?.retentionClass ?? policy.defaultClass;
  const rule = policy.classes[name];
  return rule ? { rule, source: `class:${name}` } : { rule: KEEP_EVERYTHING, source: `class:${name} (not defined)` };
}

/** The policies, stored in Redis (keys.ts): read by the trimming task, written by `qimctl retention set`. */
export class RetentionPolicies {
  constructor(private readonly store: RedisStore, private readonly keys: KeySpace) {}

  async tenant(tenant: Uuid): Promise<RetentionPolicy | null> {
    const key = retentionPolicyKey(this.keys, tenant);
    const h = await this.store.clientForKey(key).hgetall(key);
    if (Object.keys(h).length === 0) return null;
    // a policy with only `group_settings`: some group of the tenant has its own class or rule
    const classes: Record<string, RetentionRule> = {};
    for (const [f, v] of Object.entries(h)) if (f.startsWith("class:")) classes[f.slice(6)] = decodeRule(v);
    return { defaultClass: h.default_class ?? DEFAULT_RETENTION_CLASS, classes };
  }

  /** Sets (or with null removes) one class of the tenant's policy, and optionally its default class. */
  async setTenantClass(tenant: Uuid, name: string, rule: RetentionRule | null, makeDefault = false): Promise<RetentionPolicy | null> {
    checkClassName("class", name);
    const key = retentionPolicyKey(this.keys, tenant);
    const c = this.store.clientForKey(key);
    const m = c.multi();
    if (rule) m.hset(key, `class:${name}`, encodeRule(checkRule("rule", rule))); else m.hdel(key, `class:${name}`);
    if (makeDefault) m.hset(key, "default_class", name);
    await m.exec();
    return this.tenant(tenant);
  }

  async group(tenant: Uuid, group: Uuid): Promise<GroupRetention | null> {
    const key = groupRetentionKey(this.keys, tenant, group);
    const h = await this.store.clientForKey(key).hgetall(key);
    if (Object.keys(h).length === 0) return null;
    return { retentionClass: h.class ?? null, rule: h.rule ? decodeRule(h.rule) : null };
  }

  /** Sets a group's own class and/or rule; both null removes the group's setting (back to the tenant's default class). */
  async setGroup(tenant: Uuid, group: Uuid, setting: GroupRetention): Promise<GroupRetention | null> {
    const key = groupRetentionKey(this.keys, tenant, group);
    if (setting.retentionClass !== null || setting.rule !== null) {
      // first the tenant's mark that groups have their own settings: the trimming task reads a
      // group's setting only for a tenant with a policy (a tenant without one costs no read per
      // conversation per round); the mark is never removed (a stale one costs reads, not rules)
      const pk = retentionPolicyKey(this.keys, tenant);
      await this.store.clientForKey(pk).hset(pk, "group_settings", "1");
    }
    const c = this.store.clientForKey(key);
    const m = c.multi().del(key);
    if (setting.retentionClass !== null) m.hset(key, "class", checkClassName("class", setting.retentionClass));
    if (setting.rule !== null) m.hset(key, "rule", encodeRule(checkRule("rule", setting.rule)));
    await m.exec();
    return this.group(tenant, group);
  }
}

/** A tenant's policy, read once per round (`cache`: tenant hex → its read, shared by the conversation and CMD walks). */
export function policyOf(policies: RetentionPolicies, cache: Map<string, Promise<RetentionPolicy | null>>, tenantHex: UuidHex): Promise<RetentionPolicy | null> {
  let p = cache.get(tenantHex);
  if (!p) {
    p = policies.tenant(hexToUuid(tenantHex));
    cache.set(tenantHex, p);
  }
  return p;
}
