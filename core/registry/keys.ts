import { bucketTag, commitBucket, uuidToHex, type KeySpace, type Uuid } from "../base/index.js";

/**
 * A tenant's message-type registry (issue 29, spec 003 §3): one hash on the tenant's own `{bNNN}`
 * tag (commitBucket(tenant, tenant)), so a change is one script and a node's reload one read.
 *   typereg  hash  "v" -> the registry version (absent: 0, only the built-in types);
 *                  "t:" + custom_type -> the declaration (core/registry/declaration.ts encodeDeclaration)
 * At most REGISTRY_MAX_TYPES types: the whole hash is one bounded read.
 */
export interface RegistryKeys {
  tag: string;
  typereg: string;
}

export const REGISTRY_VERSION_FIELD = "v";
export const REGISTRY_TYPE_FIELD_PREFIX = "t:";

export function registryKeys(space: KeySpace, tenant: Uuid): RegistryKeys {
  const tag = bucketTag(commitBucket(tenant, tenant));
  return { tag, typereg: space.key(tag, "typereg", uuidToHex(tenant)) };
}
