--[[
  Creates or max-merges durable CMD conversation states of one user slot (spec 001
  UpsertCMDConversationStates), all or nothing: read seq, deleted-to seq, active at and updated at
  only ever grow, and a row none of whose first three would grow is not written at all, so a
  replayed or repeated batch, or an old one after a newer, changes nothing (updated at included).

  KEYS[1] cmdstate   hash  `tenantHex:userHex|type|channelId` → `read|deletedTo|activeAt|updatedAt`
  KEYS[2] cmdactive  zset  the (activeAt DESC, type, id) index, members from cmdActiveMember
  KEYS[3] lease      hash  the slot's lease (owner, token) — docs/cluster.md

  ARGV[1] owner (nodeId; "" without a cluster)
  ARGV[2] fencing token (0 without a cluster)
  ARGV[3..] rows of 7: userRef, type, channelId, read, deletedTo, activeAt, updatedAt

  Returns {0, rows changed}, or {-10} when the slot's lease names another owner or token (fenced:
  nothing written).
]]
--- @include "includes/fenceHolds"
--- @include "includes/cmdState"
if not fenceHolds(KEYS[3], ARGV[1], ARGV[2]) then return { -10 } end
local changed = 0
for i = 3, #ARGV, 7 do
  local ref, ctype, id = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local field = ref .. "|" .. ctype .. "|" .. id
  local old = redis.call("HGET", KEYS[1], field)
  local r, d, a, u = ARGV[i + 3], ARGV[i + 4], ARGV[i + 5], ARGV[i + 6]
  local write = true
  if old then
    local orr, od, oa, ou = cmdParseState(old)
    r, d, a, u = cmdMax(orr, r), cmdMax(od, d), cmdMax(oa, a), cmdMax(ou, u)
    -- nothing to merge: the row stays as it is, its updated at included (a replay is a no-op)
    write = r ~= orr or d ~= od or a ~= oa
    if a ~= oa then
      redis.call("ZREM", KEYS[2], cmdActiveMember(ref, ctype, id, oa))
      redis.call("ZADD", KEYS[2], 0, cmdActiveMember(ref, ctype, id, a))
    end
  else
    redis.call("ZADD", KEYS[2], 0, cmdActiveMember(ref, ctype, id, a))
  end
  if write then
    redis.call("HSET", KEYS[1], field, r .. "|" .. d .. "|" .. a .. "|" .. u)
    changed = changed + 1
  end
end
return { 0, changed }
