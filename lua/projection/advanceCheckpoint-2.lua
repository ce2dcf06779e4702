--[[
  Compare-and-set of the projection consumer's checkpoint of one dispatch-log partition
  (spec 002 §2.2): the position moves only from the one the caller read, so two consumers of a
  partition never move it backwards, and the checkpoint always names the identity of the log it
  was taken on (cluster_id, topic_id, partition_count).

  KEYS[1] checkpoint   hash: pos "ordinal|streamId", cluster_id, topic_id, partition_count, updated_at
  KEYS[2] lease        hash: the partition's lease (owner, token) — docs/cluster.md

  ARGV[1] expected pos ("" when the caller saw no checkpoint)
  ARGV[2] new pos
  ARGV[3] cluster_id
  ARGV[4] topic_id
  ARGV[5] partition_count
  ARGV[6] now (ms)
  ARGV[7] owner (nodeId; "" without a cluster)
  ARGV[8] fencing token (0 without a cluster)

  Returns {0, newPos}, {-9, currentPos ("" when none)}, or {-10, currentPos} when the partition's
  lease names another owner or a newer token (fenced: nothing written).
]]
--- @include "includes/fenceHolds"
local current = redis.call("HGET", KEYS[1], "pos") or ""
if not fenceHolds(KEYS[2], ARGV[7], ARGV[8]) then return {-10, current} end
if current ~= ARGV[1] then return {-9, current} end
redis.call("HSET", KEYS[1], "pos", ARGV[2], "cluster_id", ARGV[3], "topic_id", ARGV[4],
  "partition_count", ARGV[5], "updated_at", ARGV[6])
return {0, ARGV[2]}
