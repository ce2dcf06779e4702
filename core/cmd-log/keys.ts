import { blake3 } from "@noble/hashes/blake3.js";
import { bucketTag, COMMIT_BUCKET_COUNT, commitBucket, parseUuid, uuidToBytes, uuidToHex, type KeySpace, type Uuid } from "../base/index.js";
import { conversationKeys } from "../conversation/index.js";
import { CHANNEL_TYPE_GROUP, CMD_CHANNEL_SUFFIX, type CommandChannelKey } from "./types.js";

/**
 * The CMD log's keys (docs/cmd-sync-log.md). Every key of one CMD channel carries the channel's
 * commit bucket tag `{bNNN}`, beside the bucket's recent-commit index, so one script allocates the
 * seq, writes the history entry and the idempotency entry and indexes the commit atomically:
 *   cmdseq    string  the channel's own message seq counter (from 1)
 *   cmdhist   zset    score seq, member one encoded entry (log.ts) with the frozen recipients
 *   cmdidem   hash    client_msg_no → "seq|timestampMs|messageIdHex" ("seq" alone before issue 26)
 *   cmdrecent zset    per bucket: score commit ms (Redis TIME), member "tenantHex|type|channelId|seq"
 * A group-sourced channel (type 2, source = a group UUID of the tenant) lives in the group's own
 * bucket, so the commit script reads the group's member table in the same atomic step and freezes
 * its active members as the audience. (The user slots' flush points of the catch-up scan are
 * core/cmd-sync's.)
 */
export interface CmdChannelKeys {
  bucket: number;
  tag: string;
  /** "tenantHex|type|channelId|": the channel's prefix of its cmdrecent members (the seq follows). */
  recentRef: string;
  seq: string;
  hist: string;
  idem: string;
  recent: string;
  /** The source group's member table when the channel is group-sourced, else null. */
  grpmembers: string | null;
  /** The source group's meta hash (member_count; dissolved_at: a dissolved group takes no CMD) when the channel is group-sourced, else null. */
  grpmeta: string | null;
}

const UUID_TEXT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * The source group of a channel: its type is 2 and its id without the one suffix is a group UUID
 * in canonical text. Any other channel has no source group (its sends name their recipients).
 */
export function sourceGroupOf(channel: CommandChannelKey): Uuid | null {
  if (channel.channelType !== CHANNEL_TYPE_GROUP || !channel.channelId.endsWith(CMD_CHANNEL_SUFFIX)) return null;
  const source = channel.channelId.slice(0, -CMD_CHANNEL_SUFFIX.length);
  return UUID_TEXT.test(source) ? parseUuid(source, "channelId") : null;
}

const CHANNEL_HASH_DOMAIN = new TextEncoder().encode("qim.cmd-channel.v1\0");

/**
 * The commit bucket of a CMD channel. A group-sourced channel: the group's bucket
 * (commitBucket(tenant, group)). Any other: the first 4 bytes of
 * blake3("qim.cmd-channel.v1\0" ‖ tenant (16 bytes) ‖ type (1 byte) ‖ channel id (ASCII)),
 * big-endian, mod COMMIT_BUCKET_COUNT. Frozen once data exists, like commitBucket.
 */
export function cmdChannelBucket(tenant: Uuid, channel: CommandChannelKey): number {
  const group = sourceGroupOf(channel);
  if (group !== null) return commitBucket(tenant, group);
  const id = new TextEncoder().encode(channel.channelId);
  const input = new Uint8Array(CHANNEL_HASH_DOMAIN.length + 17 + id.length);
  input.set(CHANNEL_HASH_DOMAIN, 0);
  input.set(uuidToBytes(tenant), CHANNEL_HASH_DOMAIN.length);
  input[CHANNEL_HASH_DOMAIN.length + 16] = channel.channelType;
  input.set(id, CHANNEL_HASH_DOMAIN.length + 17);
  const d = blake3(input);
  return (((d[0]! << 24) | (d[1]! << 16) | (d[2]! << 8) | d[3]!) >>> 0) % COMMIT_BUCKET_COUNT;
}

export function cmdChannelKeys(space: KeySpace, tenant: Uuid, channel: CommandChannelKey): CmdChannelKeys {
  const bucket = cmdChannelBucket(tenant, channel);
  const tag = bucketTag(bucket);
  const ref = `${uuidToHex(tenant)}:${channel.channelType}:${channel.channelId}`;
  const group = sourceGroupOf(channel);
  return {
    bucket,
    tag,
    recentRef: `${uuidToHex(tenant)}|${channel.channelType}|${channel.channelId}|`,
    seq: space.key(tag, "cmdseq", ref),
    hist: space.key(tag, "cmdhist", ref),
    idem: space.key(tag, "cmdidem", ref),
    recent: cmdRecentKey(space, bucket),
    grpmembers: group === null ? null : conversationKeys(space, tenant, group).grpmembers,
    grpmeta: group === null ? null : conversationKeys(space, tenant, group).grpmeta,
  };
}

/** A bucket's recent-commit index (the catch-up scan reads it on every node). */
export function cmdRecentKey(space: KeySpace, bucket: number): string {
  return space.key(bucketTag(bucket), "cmdrecent");
}
