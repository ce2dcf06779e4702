--[[
  Advances the read seq of durable CMD conversation states that exist (spec 001
  AdvanceCMDConversationReadSeq), all or nothing: a patch for a missing row is a no-op, a read
  seq never goes back (a max merge), updated at only grows. A row read up to its last seq leaves
  the unread index.

  KEYS[1] cmdstate   hash  `tenantHex:userHex|type|channelId` → `read|deletedTo|activeAt|updatedAt|lastMsgSeq`
  KEYS[2] cmdunread  zset  the (activeAt DESC, type, id) index of the unread rows
  KEYS[3] lease      hash  the slot's lease (owner, token)

  ARGV[1] owner, ARGV[2] fencing token
  ARGV[3..] rows of 5: userRef, type, channelId, read, updatedAt

  Returns {0, rows advanced}, or {-10} when fenced (nothing written).
]]
--- @include "includes/fenceHolds"
--- @include "includes/cmdState"
--- @include "includes/cmdUnreadIndex"
if not fenceHolds(KEYS[3], ARGV[1], ARGV[2]) then return { -10 } end
local advanced = 0
for i = 3, #ARGV, 5 do
  local ref, ctype, id = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local field = ref .. "|" .. ctype .. "|" .. id
  local old = redis.call("HGET", KEYS[1], field)
  if old then
    local r, d, a, u, l = cmdParseState(old)
    if tonumber(ARGV[i + 3]) > tonumber(r) then
      redis.call("HSET", KEYS[1], field, ARGV[i + 3] .. "|" .. d .. "|" .. a .. "|" .. cmdMax(u, ARGV[i + 4]) .. "|" .. l)
      cmdUnreadIndex(KEYS[2], ref, ctype, id, a, cmdIsUnread(r, d, l), a, cmdIsUnread(ARGV[i + 3], d, l))
      advanced = advanced + 1
    end
  end
end
return { 0, advanced }
