--[[
  Advances the read seq of durable CMD conversation states that exist (spec 001
  AdvanceCMDConversationReadSeq), all or nothing: a patch for a missing row is a no-op, a read
  seq never goes back (a max merge), updated at only grows.

  KEYS[1] cmdstate   hash  `tenantHex:userHex|type|channelId` → `read|deletedTo|activeAt|updatedAt`
  KEYS[2] lease      hash  the slot's lease (owner, token)

  ARGV[1] owner, ARGV[2] fencing token
  ARGV[3..] rows of 5: userRef, type, channelId, read, updatedAt

  Returns {0, rows advanced}, or {-10} when fenced (nothing written).
]]
--- @include "includes/fenceHolds"
--- @include "includes/cmdState"
if not fenceHolds(KEYS[2], ARGV[1], ARGV[2]) then return { -10 } end
local advanced = 0
for i = 3, #ARGV, 5 do
  local field = ARGV[i] .. "|" .. ARGV[i + 1] .. "|" .. ARGV[i + 2]
  local old = redis.call("HGET", KEYS[1], field)
  if old then
    local r, d, a, u = cmdParseState(old)
    if tonumber(ARGV[i + 3]) > tonumber(r) then
      redis.call("HSET", KEYS[1], field, ARGV[i + 3] .. "|" .. d .. "|" .. a .. "|" .. cmdMax(u, ARGV[i + 4]))
      advanced = advanced + 1
    end
  end
end
return { 0, advanced }
