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

/**
 * The CMD channels of a commit bucket that retention walks (issue 26), on the bucket's `{bNNN}`:
 * zset, member "tenantHex|type|channelId", score the newest commit (ms) seen of the channel. Filled
 * by the trimming task from the bucket's recent-commit index (`cmdrecent`, kept 24 h), so the
 * commit path writes nothing more; a channel whose history and idempotency index are empty leaves
 * it (its next commit brings it back).
 */
export function cmdChannelDirectoryKey(space: KeySpace, bucket: number): string {
  return space.key(bucketTag(bucket), "retention:cmdchannels");
}

/**
 * The CMD trim's cursors of a commit bucket, hash on `{bNNN}`: field "_recent" → "ms|offset" (how
 * far into `cmdrecent` the directory is filled), field "tenantHex|type|channelId" → the channel's
 * idempotency scan cursor (trimCmdHistory).
 */
export function cmdTrimStateKey(space: KeySpace, bucket: number): string {
  return space.key(bucketTag(bucket), "retention:cmdtrim");
}
