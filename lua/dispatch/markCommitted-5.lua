--[[
  Marks commits COMMITTED once the relay has appended them to the dispatch log: drops the commit
  record, the outbox entry and the vpending entry, then retires every version delta that no
  undispatched message needs any more (all of them when nothing is pending).

  KEYS[1] commits    hash: seq -> "R|version|audience" — RECORDED control messages
  KEYS[2] outbox     list: the bucket's outbox
  KEYS[3] vpending   zset: score version, member seq — RECORDED group messages
  KEYS[4] grpdeltas  hash: version -> "op|targets"
  KEYS[5] lease      hash: the bucket's relay lease (owner, token) — docs/cluster.md

  ARGV[1] owner (nodeId; "" without a cluster)
  ARGV[2] fencing token (0 without a cluster)
  ARGV[3] outbox ref "tenantHex|conversationHex"
  ARGV[4..] seqs

  Returns the number of seqs that were still RECORDED (in commits or vpending), or -10 when the
  bucket's lease names another owner or a newer token (fenced: nothing written).
]]
--- @include "includes/fenceHolds"
if not fenceHolds(KEYS[5], ARGV[1], ARGV[2]) then return -10 end
local marked = 0
for i = 4, #ARGV do
  local seq = ARGV[i]
  marked = marked + redis.call("HDEL", KEYS[1], seq) + redis.call("ZREM", KEYS[3], seq)
  redis.call("LREM", KEYS[2], 1, ARGV[3] .. "|" .. seq)
end
local oldest = redis.call("ZRANGE", KEYS[3], 0, 0, "WITHSCORES")
if #oldest == 0 then
  redis.call("DEL", KEYS[4])
else
  -- a message frozen at version v needs deltas v+1 .. current; everything at or below v goes
  local floor = tonumber(oldest[2])
  for _, k in ipairs(redis.call("HKEYS", KEYS[4])) do
    if tonumber(k) <= floor then redis.call("HDEL", KEYS[4], k) end
  end
end
return marked
