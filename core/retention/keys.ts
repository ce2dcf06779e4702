import { bucketTag, commitBucket, GLOBAL_TAG, uuidToHex, type KeySpace, type Uuid } from "../base/index.js";

/**
 * A tenant's retention policy (issue 26): hash on `{g000}` (read once per trimming round, never in
 * a script beside the data): `default_class` → the class a conversation without its own setting
 * is in; `class:<name>` → "maxAgeMs|maxCount" (0: no limit of that kind). No key: nothing of the
 * tenant is ever trimmed (the behaviour before retention existed).
 */
export function retentionPolicyKey(space: KeySpace, tenant: Uuid): string {
  return space.key(GLOBAL_TAG, "retention:policy", uuidToHex(tenant));
}

/**
 * One group's own retention setting, on the group's `{bNNN}` bucket beside its history: `class`
 * (a class of the tenant's policy) and/or `rule` ("maxAgeMs|maxCount", which wins over any class).
 * No key: the tenant's default class.
 */
export function groupRetentionKey(space: KeySpace, tenant: Uuid, group: Uuid): string {
  return space.key(bucketTag(commitBucket(tenant, group)), "retention", `${uuidToHex(tenant)}:${uuidToHex(group)}`);
}
